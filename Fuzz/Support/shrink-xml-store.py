#!/usr/bin/env python3
"""Writes a small copy of a Core Data XML store: the first N objects of each type, with references
to the objects left out removed. Fuzzing is faster on small stores (libFuzzer mutates each seed
many times a second); scripts/fuzz turns the result into SQLite and binary seeds with
`storefs migrate`.

usage: shrink-xml-store.py IN.xml OUT.xml [N]
"""
import sys
import xml.etree.ElementTree as ET

source, target = sys.argv[1], sys.argv[2]
keep_per_type = int(sys.argv[3]) if len(sys.argv) > 3 else 3
text = open(source, encoding="utf-8").read()
prolog = text[: text.index("<database")]
root = ET.fromstring(text[len(prolog):])
kept, dropped, per_type = set(), set(), {}
for obj in root.findall("object"):
    n = per_type.get(obj.get("type"), 0)
    if n < keep_per_type:
        per_type[obj.get("type")] = n + 1
        kept.add(obj.get("id"))
    else:
        dropped.add(obj.get("id"))
        root.remove(obj)
for rel in root.iter("relationship"):
    refs = [r for r in (rel.get("idrefs") or "").split() if r in kept]
    if refs:
        rel.set("idrefs", " ".join(refs))
    elif "idrefs" in rel.attrib:
        del rel.attrib["idrefs"]
with open(target, "w", encoding="utf-8") as out:
    out.write(prolog + ET.tostring(root, encoding="unicode") + "\n")
