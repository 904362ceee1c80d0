#!/usr/bin/env python3
"""Writes the model versions of the lightweight-migration tests: Base.xcdatamodel and one version
per rule of Core Data's lightweight migration, each Base changed by that rule alone.

Run from this folder; the output is committed, so the tests need no Python. Each model is the
`contents` XML Xcode writes (the attributes storefs's loader reads).
"""
import copy, os

def attribute(name, type_, optional=True, default=None, element_id=None):
    return {"kind": "attribute", "name": name, "type": type_, "optional": optional, "default": default, "elementID": element_id}

def relationship(name, destination, inverse, to_many=False, ordered=False, optional=True, element_id=None):
    return {"kind": "relationship", "name": name, "destination": destination, "inverse": inverse, "toMany": to_many,
            "ordered": ordered, "optional": optional, "elementID": element_id}

BASE = {
    "Author": {"parent": None, "abstract": False, "properties": [
        attribute("born", "Integer 16"), attribute("name", "String"), attribute("nickname", "String"),
        attribute("rating", "Float"), relationship("books", "Book", "author", to_many=True)]},
    "Book": {"parent": None, "abstract": False, "properties": [
        attribute("blurb", "String"), attribute("isbn", "String"), attribute("pages", "Integer 16"),
        attribute("title", "String", optional=False), relationship("author", "Author", "books"),
        relationship("chapters", "Chapter", "book", to_many=True, ordered=True)]},
    "Chapter": {"parent": None, "abstract": False, "properties": [
        attribute("title", "String"), relationship("book", "Book", "chapters")]},
    "Magazine": {"parent": None, "abstract": False, "properties": [
        attribute("issue", "Integer 32"), attribute("title", "String", optional=False)]},
    "Newspaper": {"parent": "Periodical", "abstract": False, "properties": [attribute("city", "String")]},
    "Note": {"parent": None, "abstract": False, "properties": [attribute("text", "String")]},
    "Periodical": {"parent": None, "abstract": False, "properties": [attribute("name", "String")]},
}

def prop(model, entity, name):
    return next(p for p in model[entity]["properties"] if p["name"] == name)

def remove(model, entity, name):
    model[entity]["properties"] = [p for p in model[entity]["properties"] if p["name"] != name]

def rules():
    m = copy.deepcopy(BASE)
    prop_ = lambda e, n: prop(m, e, n)
    # Added: an optional attribute, a mandatory one with a default, an entity and a relationship to it.
    m["Author"]["properties"].append(attribute("email", "String"))
    m["Book"]["properties"].append(attribute("inPrint", "Boolean", optional=False, default="YES"))
    m["Book"]["properties"].append(relationship("publisher", "Publisher", "books"))
    m["Publisher"] = {"parent": None, "abstract": False, "properties": [
        attribute("name", "String"), relationship("books", "Book", "publisher", to_many=True)]}
    yield "Added", m

    m = copy.deepcopy(BASE)
    remove(m, "Author", "nickname"); remove(m, "Book", "blurb"); remove(m, "Book", "chapters"); remove(m, "Chapter", "book")
    del m["Note"]
    yield "Removed", m

    m = copy.deepcopy(BASE)
    m["Writer"] = m.pop("Author"); m["Writer"]["elementID"] = "Author"
    p = prop(m, "Writer", "name"); p["name"] = "fullName"; p["elementID"] = "name"
    p = prop(m, "Writer", "books"); p["name"] = "works"; p["elementID"] = "books"; p["inverse"] = "writer"
    p = prop(m, "Book", "author"); p["name"] = "writer"; p["elementID"] = "author"; p["destination"] = "Writer"; p["inverse"] = "works"
    p = prop(m, "Book", "title"); p["name"] = "heading"; p["elementID"] = "title"
    yield "Renamed", m

    m = copy.deepcopy(BASE)
    p = prop(m, "Author", "name"); p["optional"] = False; p["default"] = "Unknown"
    yield "MadeMandatory", m

    m = copy.deepcopy(BASE)
    p = prop(m, "Book", "author"); p["name"] = "authors"; p["elementID"] = "author"; p["toMany"] = True
    prop(m, "Author", "books")["inverse"] = "authors"
    yield "ToOneToMany", m

    m = copy.deepcopy(BASE)
    p = prop(m, "Author", "books"); p["name"] = "book"; p["elementID"] = "books"; p["toMany"] = False
    prop(m, "Book", "author")["inverse"] = "book"
    yield "ToManyToOne", m

    m = copy.deepcopy(BASE)
    prop(m, "Book", "chapters")["ordered"] = False
    prop(m, "Author", "books")["ordered"] = True
    yield "Reordered", m

    m = copy.deepcopy(BASE)
    m["Publication"] = {"parent": None, "abstract": True, "properties": [attribute("title", "String", optional=False)]}
    for child in ["Book", "Magazine"]:
        remove(m, child, "title"); m[child]["parent"] = "Publication"
    yield "IntoHierarchy", m

    m = copy.deepcopy(BASE)
    m["Newspaper"]["parent"] = None
    m["Newspaper"]["properties"].insert(0, attribute("name", "String"))
    yield "OutOfHierarchy", m

    m = copy.deepcopy(BASE)
    prop(m, "Author", "born")["type"] = "Integer 64"
    prop(m, "Author", "rating")["type"] = "Double"
    prop(m, "Book", "isbn")["type"] = "URI"
    yield "WidenedTypes", m

    m = copy.deepcopy(BASE)
    prop(m, "Book", "pages")["type"] = "String"
    yield "ChangedType", m

def contents(model):
    out = ['<?xml version="1.0" encoding="UTF-8" standalone="yes"?>',
           '<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22758" '
           'systemVersion="23E224" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">']
    for name in sorted(model):
        entity = model[name]
        attrs = f'name="{name}" representedClassName="{name}"'
        if entity["parent"]: attrs += f' parentEntity="{entity["parent"]}"'
        if entity["abstract"]: attrs += ' isAbstract="YES"'
        if entity.get("elementID"): attrs += f' elementID="{entity["elementID"]}"'
        out.append(f'    <entity {attrs} syncable="YES">')
        for p in sorted(entity["properties"], key=lambda p: (p["kind"], p["name"])):
            if p["kind"] == "attribute":
                a = f'name="{p["name"]}"' + (' optional="YES"' if p["optional"] else "") + f' attributeType="{p["type"]}"'
                if p["default"] is not None: a += f' defaultValueString="{p["default"]}"'
                if p["elementID"]: a += f' elementID="{p["elementID"]}"'
                out.append(f'        <attribute {a} syncable="YES"/>')
            else:
                r = f'name="{p["name"]}"' + (' optional="YES"' if p["optional"] else "")
                r += ' toMany="YES"' if p["toMany"] else ' maxCount="1"'
                if p["ordered"]: r += ' ordered="YES"'
                r += f' deletionRule="Nullify" destinationEntity="{p["destination"]}" inverseName="{p["inverse"]}" inverseEntity="{p["destination"]}"'
                if p["elementID"]: r += f' elementID="{p["elementID"]}"'
                out.append(f'        <relationship {r} syncable="YES"/>')
        out.append('    </entity>')
    out.append('</model>')
    return "\n".join(out) + "\n"

def write(name, model):
    folder = f"{name}.xcdatamodel"
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "contents"), "w") as f:
        f.write(contents(model))

write("Base", BASE)
for name, model in rules():
    write(name, model)
