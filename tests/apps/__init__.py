"""Small task classes and helpers used by the container, run-loop, storage and runner tests
(importable as ``tests.apps.<module>:<Class>``)."""
