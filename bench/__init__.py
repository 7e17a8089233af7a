"""Benchmarks. Never run by the test suite (a smoke test runs them tiny); results go to
docs/benchmarks.md, each benchmark in its own marked section."""
