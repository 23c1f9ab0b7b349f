import sys

from agent_stream.cli import run

sys.exit(run())
