"""Wire adapters: one module per wire format (``chat``, ``openai``, ...), pure translators."""
