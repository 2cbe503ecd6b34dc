"""Apache Iggy's binary TCP protocol: revisions ``classic`` (the 0.8 client and server) and
``doc`` (iggy-binary-protocol.txt).  The plug-in is :data:`.plugin.PLUGIN`; the facts the
classic revision rests on are in FACTS.md, the requirements in SPEC.md."""
