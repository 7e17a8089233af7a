"""The dg defs folder of this repository's project: one SamzaJobComponent per application
(``<app>/defs.yaml``, pointing at ``jobs/<app>/<app>.properties``) and the applications' sample
loaders (``samples.py``)."""
