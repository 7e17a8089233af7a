"""The coordinator stream protocol (Samza's ``org.apache.samza.coordinator.stream``): the messages
and their wire format (``messages``), the folded view a compacted stream would hold (``state``),
reading and writing the stream through any system (``reader_writer``), and submitting a job's
config to it with the set-once checks (``submission``) and Samza's coordinator stream writer
tool, one config change at a time (``writer_tool``)."""
