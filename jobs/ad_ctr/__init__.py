"""ad_ctr: a use case of Samza's MessageChooser design (SAMZA-2).

``ad_views`` and ``ad_clicks`` (both keyed by view id, so a view and its click meet in one task)
are joined within a 5-minute event-time window: each view yields (ad-id, click: true/false).
The task holds views waiting for a click and clicks that arrived before their view; how many it
holds at most is the memory SAMZA-2's time alignment wants to shrink. With
``task.chooser.class=samza_dagster.system.chooser:TimeAlignedChooserFactory`` the streams are
consumed in event-time order and the buffer stays at about five minutes of views; with the default
round-robin chooser the sparse clicks stream runs hours ahead and its clicks pile up.
"""
