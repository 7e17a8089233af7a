"""Errors of the message choosers."""

from samza_dagster.errors import SamzaError


class ChooserError(SamzaError, ValueError):
    """A chooser cannot be built or cannot choose as configured: a stream with a priority no
    chooser serves, bootstrap streams whose metadata cannot be fetched, a bad batch size or skew.
    Names the streams, priority or argument at fault."""


class NotAChooserError(ChooserError, TypeError):
    """An object given as a MessageChooser lacks its methods; names the object's type and the
    methods it lacks."""
