import sys

from agent_stream.cli import main

sys.exit(main())
