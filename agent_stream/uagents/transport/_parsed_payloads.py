"""Chat-protocol payloads parsed once: the inbox guard's models handed to uagents' own parse.

uagents' inbox task parses every payload it handles with ``model.parse_raw`` (pydantic v1: tens
to hundreds of microseconds for a ChatMessage, the more content items the more), after the inbox
guard (:mod:`._guard`) parsed the same payload to know it is safe. For the chat protocol's two
models (ChatMessage, ChatAcknowledgement), the guarded agent's own models table gets, in their
place, a subclass made for that agent whose ``parse_raw`` returns the model the guard built from
the very same payload text, else parses it as the chat model does. Handlers get the instance of
the chat model they always got. The ``Agent`` class, the chat models and every other agent are
untouched (the table is the agent's own dict; :mod:`._compat` checks that uagents still parses
through it).

Models wait here by their payload text until uagents takes them, at most ``limit`` (the oldest
dropped first: uagents then parses that payload itself, as it would have).
"""

from __future__ import annotations

from typing import Any

from uagents_core.contrib.protocols.chat import ChatAcknowledgement, ChatMessage
from uagents_core.models import Model

from agent_stream.recent import RecentMap

__all__ = ["HANDED_OVER", "Handover", "base_of"]

#: The models whose parsed instances are handed over (the chat protocol's).
HANDED_OVER: tuple[type[Model], ...] = (ChatMessage, ChatAcknowledgement)
_BASE = "__agent_stream_handover_base__"


def base_of(model: type[Model]) -> type[Model]:
    """The chat model a handover subclass stands for (``model`` itself for any other).

    Args:
        model: a model class from an agent's models table.
    """
    base: type[Model] = getattr(model, _BASE, None) or model
    return base


class Handover:
    """One agent's parsed chat payloads, waiting for uagents' parse of the same text.

    Args:
        limit: models kept at most (the oldest dropped first).
    """

    def __init__(self, limit: int = 4096) -> None:
        self._waiting: RecentMap[str, Model] = RecentMap(limit)
        self._models: dict[type[Model], type[Model]] = {}
        self.taken = 0  # payloads uagents did not have to parse again

    def __len__(self) -> int:
        return len(self._waiting)

    def model_for(self, base: type[Model]) -> type[Model]:
        """The subclass of ``base`` (a chat model) whose ``parse_raw`` takes from here.

        Args:
            base: ChatMessage or ChatAcknowledgement.
        """
        model = self._models.get(base)
        if model is None:
            take = self.take

            def parse_raw(cls: type[Model], b: Any, /, **kwargs: Any) -> Model:
                parsed = take(b) if not kwargs else None
                return parsed if parsed is not None else base.parse_raw(b, **kwargs)

            namespace = {
                "parse_raw": classmethod(parse_raw),
                _BASE: base,
                "__module__": __name__,
                "__qualname__": base.__qualname__,
                "__doc__": base.__doc__,
            }
            model = self._models[base] = type(base.__name__, (base,), namespace)
        return model

    def put(self, payload: str, model: Model) -> None:
        """Keep ``model``, parsed from ``payload``, for uagents' parse of that text.

        Args:
            payload: the JSON text as it will be queued.
            model: what it parses to.
        """
        self._waiting.put(payload, model)

    def take(self, payload: Any) -> Model | None:
        """The model kept for ``payload`` (forgotten here), or None.

        Args:
            payload: the JSON text uagents parses.
        """
        if not isinstance(payload, str):
            return None
        model = self._waiting.pop(payload)
        if model is not None:
            self.taken += 1
        return model
