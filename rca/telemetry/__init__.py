"""The incident telemetry model, the recorded-case loaders, the live source and the replay."""
