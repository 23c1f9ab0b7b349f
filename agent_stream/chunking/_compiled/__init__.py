"""The chunker's modules compiled: the build puts ``buffer``, ``sentences``, ``scanner``,
``policy`` and ``chunker`` here as extension modules, made from the modules of the same names one
level up (their relative imports find each other here). Empty when nothing was compiled."""
