import Foundation
import TestSupport
import Testing

@testable import ObjectGraph

#if canImport(FoundationXML)
    import FoundationXML
#endif

// MARK: - Corpus

/// The corpus of real Xcode models in the repository (Tests/Fixtures/corpus/models).
private let corpusDirectory: URL = Corpus.url("models")

private let corpusModelNames: [String] = Corpus.names(in: "models") {
    $0.hasSuffix(".xcdatamodeld") || $0.hasSuffix(".xcdatamodel")
}

private func corpusURL(_ name: String) -> URL { corpusDirectory.appendingPathComponent(name) }

/// Every `.xcdatamodel` folder of a corpus entry: itself, or each version of a bundle.
private func versionFolders(of name: String) throws -> [URL] {
    let url = corpusURL(name)
    if name.hasSuffix(".xcdatamodel") { return [url] }
    return try XcodeModelLoader.versions(in: url).values.sorted { $0.path < $1.path }
}

/// Facts read from a `contents` file with XMLDocument, independently of the loader.
private struct IndependentEntityFacts: Equatable {
    var name: String
    var parent: String?
    var attributes: [String]  // "name:type:optional"
    var relationships: [String]  // "name->destination/inverse:rule:toMany"
}

private func independentFacts(of contents: URL) throws -> [IndependentEntityFacts] {
    let document = try XMLDocument(contentsOf: contents, options: [])
    let entities = try document.nodes(forXPath: "/model/entity").compactMap { $0 as? XMLElement }
    return entities.map { entity in
        func value(_ element: XMLElement, _ name: String) -> String? {
            element.attribute(forName: name)?.stringValue
        }
        let attributes = (entity.elements(forName: "attribute")).map {
            "\(value($0, "name")!):\(value($0, "attributeType")!):\(value($0, "optional") == "YES")"
        }
        let relationships = entity.elements(forName: "relationship").map {
            "\(value($0, "name")!)->\(value($0, "destinationEntity")!)/\(value($0, "inverseName") ?? "-")"
                + ":\(value($0, "deletionRule") ?? "Nullify"):\(value($0, "toMany") == "YES")"
        }
        return IndependentEntityFacts(
            name: value(entity, "name")!, parent: value(entity, "parentEntity"), attributes: attributes,
            relationships: relationships)
    }.sorted { $0.name < $1.name }
}

private func loadedFacts(of model: ManagedObjectModel) -> [IndependentEntityFacts] {
    model.entities.map { entity in
        IndependentEntityFacts(
            name: entity.name, parent: entity.parentName,
            attributes: entity.attributes.map { "\($0.name):\($0.type.rawValue):\($0.isOptional)" },
            relationships: entity.relationships.map {
                "\($0.name)->\($0.destinationEntityName)/\($0.inverseName ?? "-"):\($0.deleteRule.rawValue):\($0.isToMany)"
            })
    }.sorted { $0.name < $1.name }
}

@Test func corpusIsPresent() {
    #expect(corpusModelNames.count >= 10, "corpus at \(corpusDirectory.path)")
}

@Test(arguments: corpusModelNames)
func corpusModelLoadsAsItsFilesSay(name: String) throws {
    let model = try XcodeModelLoader.load(from: corpusURL(name))
    #expect(!model.entities.isEmpty)
    for folder in try versionFolders(of: name) {
        let version = try XcodeModelLoader.load(from: folder)
        let fromContents = try XcodeModelLoader.load(from: folder.appendingPathComponent("contents"))
        #expect(version == fromContents)
        let expected = try independentFacts(of: folder.appendingPathComponent("contents"))
        #expect(loadedFacts(of: version) == expected, "\(folder.lastPathComponent)")
    }
}

@Test(arguments: corpusModelNames)
func corpusModelRoundTripsThroughWriter(name: String) throws {
    for folder in try versionFolders(of: name) {
        let original = try XcodeModelLoader.load(from: folder)
        let written = XcodeModelWriter.contents(of: original)
        let reloaded = try XcodeModelLoader.load(contents: Data(written.utf8), source: "written \(name)")
        #expect(reloaded == original, "\(folder.lastPathComponent)")
    }
}

@Test func bundleLoadsTheVersionNamedByXCCurrentVersion() throws {
    let bundle = corpusURL("wibosco_CoreDataMigration-Example_CoreDataMigration_Example.xcdatamodeld")
    let versions = try XcodeModelLoader.versions(in: bundle)
    #expect(
        Set(versions.keys) == [
            "CoreDataMigration_Example.xcdatamodel", "CoreDataMigration_Example 2.xcdatamodel",
            "CoreDataMigration_Example 3.xcdatamodel", "CoreDataMigration_Example 4.xcdatamodel"
        ])
    let current = try XcodeModelLoader.load(from: bundle)
    // .xccurrentversion names version 4, the only one whose Post has "hide".
    #expect(current == (try XcodeModelLoader.load(from: versions["CoreDataMigration_Example 4.xcdatamodel"]!)))
    #expect(current.entity(named: "Post")?.attribute(named: "hide") != nil)
    let third = try XcodeModelLoader.load(from: versions["CoreDataMigration_Example 3.xcdatamodel"]!)
    #expect(third.entity(named: "Post")?.attribute(named: "hide") == nil)

    let momcom = try XcodeModelLoader.load(from: corpusURL("atomicbird_momcom_momcomTests.xcdatamodeld"))
    #expect(
        momcom.fetchRequestTemplates.map(\.name) == [
            "FetchRequestDictionaries", "FetchRequestObjectIDs", "FetchRequestObjects"
        ])
}

// MARK: - Facts of particular files

@Test func momcomModelReadsEveryFeature() throws {
    let model = try XcodeModelLoader.load(from: corpusURL("atomicbird_momcom_momcomTests.xcdatamodeld"))
    #expect(model.entities.map(\.name).sorted() == ["AbstractEntity", "Entity", "OtherEntity", "UnrelatedEntity"])
    #expect(model.versionIdentifier == nil)  // userDefinedModelVersionIdentifier=""

    let abstract = try #require(model.entity(named: "AbstractEntity"))
    #expect(abstract.isAbstract)
    let entity = try #require(model.entity(named: "Entity"))
    #expect(entity.parentName == "AbstractEntity")
    #expect(entity.parentID == abstract.id)
    #expect(entity.representedClassName == "EntityClass")
    #expect(entity.renamingIdentifier == "myRenamingIdentifier")
    #expect(entity.versionHashModifier == "myVersionHashModifier")
    #expect(entity.userInfo == ["someKey": "randomValue"])

    let binary = try #require(entity.attribute(named: "binaryAttribute"))
    #expect(binary.type == .binaryData && binary.isTransient && binary.isOptional)
    #expect(binary.userInfo == ["binaryBar": "NO", "binaryBaz": "MAYBE", "binaryFoo": "YES"])
    let date = try #require(entity.attribute(named: "dateAttribute"))
    #expect(date.defaultValue == .date(Date(timeIntervalSinceReferenceDate: 388_411_200)))
    #expect(date.minValue == .date(Date(timeIntervalSinceReferenceDate: 284_000_400)))
    #expect(date.maxValue == .date(Date(timeIntervalSinceReferenceDate: 602_395_200)))
    #expect(entity.attribute(named: "decimalAttribute")?.minValue == .decimal(Decimal(string: "-4.5")!))
    #expect(entity.attribute(named: "decimalAttribute")?.defaultValue == .decimal(0))
    #expect(entity.attribute(named: "doubleAttribute")?.maxValue == .double(3.5))
    #expect(entity.attribute(named: "floatAttribute")?.minValue == .float(-2.5))
    #expect(entity.attribute(named: "int16Attribute")?.minValue == .integer(-3))
    #expect(entity.attribute(named: "int16Attribute")?.maxValue == .integer(9))
    #expect(entity.attribute(named: "int64Attribute")?.defaultValue == .integer(0))
    #expect(entity.attribute(named: "transformableAttribute")?.valueTransformerName == "myValueTransformer")

    let others = try #require(entity.relationship(named: "otherEntities"))
    #expect(others.destinationEntityName == "OtherEntity" && others.inverseName == "mainEntity")
    #expect(others.isToMany && others.minCount == 1 && others.maxCount == 9 && others.deleteRule == .nullify)
    let main = try #require(model.entity(named: "OtherEntity")?.relationship(named: "mainEntity"))
    #expect(!main.isToMany && main.maxCount == 1)
    #expect(model.inverse(of: main)?.name == "otherEntities")

    let fetched = try #require(entity.fetchedProperty(named: "yesBooleans"))
    #expect(fetched.destinationEntityName == "Entity")
    #expect(fetched.predicateString == "booleanAttribute = YES")

    let dictionaries = try #require(model.fetchRequestTemplates.first { $0.name == "FetchRequestDictionaries" })
    #expect(dictionaries.entityName == "Entity")
    #expect(dictionaries.predicateString == "booleanAttribute == 1 AND floatAttribute > 5")
    #expect(dictionaries.options["resultType"] == "2" && dictionaries.options["includeSubentities"] == "YES")
    #expect(
        model.fetchRequestTemplates.first { $0.name == "FetchRequestObjects" }?.options
            == ["fetchLimit": "100", "fetchBatchSize": "10"])
    #expect(
        model.configurations == [ModelConfiguration(name: "UnrelatedConfiguration", entityNames: ["UnrelatedEntity"])])
}

@Test func mogeneratorModelReadsRequiredAttributesAndEscapedUserInfo() throws {
    let model = try XcodeModelLoader.load(from: corpusURL("rentzsch_mogenerator_test.xcdatamodel"))
    let human = try #require(model.entity(named: "Human"))
    let age = try #require(human.attribute(named: "age"))
    // Xcode omits optional= on required attributes.
    #expect(!age.isOptional && age.type == .integer16 && age.minValue == .integer(0) && age.defaultValue == .integer(0))
    #expect(age.userInfo == ["mogenerator.readonly": "true"])
    #expect(human.userInfo["key with.dots..."] == "value with \"quotes\"")
    #expect(model.entity(named: "Parent")?.relationship(named: "children")?.deleteRule == .cascade)
    let ordered = try #require(model.entity(named: "Parent")?.relationship(named: "orderedChildren"))
    #expect(ordered.isOrdered && ordered.isToMany && ordered.inverseName == "parent")
    #expect(model.entity(named: "Child")?.allAttributes.map(\.name).prefix(3) == ["age", "gender", "humanName"])
    let allHumans = try #require(model.fetchRequestTemplates.first { $0.name == "allHumans" })
    #expect(allHumans.entityName == "Human" && allHumans.predicateString == nil)
}

@Test func coreDataPlusModelReadsConstraintsAndTypes() throws {
    let model = try XcodeModelLoader.load(from: corpusURL("alemar11_CoreDataPlus_SampleModel.xcdatamodeld"))
    #expect(model.versionIdentifier == "1")
    #expect(model.entity(named: "Car")?.uniquenessConstraints == [["numberPlate"]])
    #expect(model.entity(named: "Person")?.uniquenessConstraints == [["firstName", "lastName"]])
    let id = try #require(model.entity(named: "Person")?.attribute(named: "id"))
    #expect(id.type == .uuid && !id.isOptional)
    #expect(model.entity(named: "Person")?.attribute(named: "isDriving")?.defaultValue == .boolean(false))
    #expect(model.entity(named: "Car")?.attribute(named: "color")?.valueTransformerName == "ColorTransformer")
    #expect(model.entity(named: "ExpensiveSportCar")?.parentName == "SportCar")
}

// MARK: - Writer

@Test func writerRoundTripsEdgeValues() throws {
    let reference = Date(timeIntervalSinceReferenceDate: 12.345_678_9)
    let model = try ManagedObjectModel(
        entities: [
            EntityDescription(
                name: "Zeta", isAbstract: true, representedClassName: "Z<&>\"'",
                attributes: [
                    AttributeDescription(name: "d", type: .double, defaultValue: .double(0.1), minValue: .double(-0.0)),
                    AttributeDescription(name: "f", type: .float, isOptional: false, defaultValue: .float(1.0e-7)),
                    AttributeDescription(
                        name: "dec", type: .decimal, defaultValue: .decimal(Decimal(string: "123.456")!)),
                    AttributeDescription(
                        name: "i16", type: .integer16, minValue: .integer(-32768), maxValue: .integer(32767)),
                    AttributeDescription(name: "i64", type: .integer64, defaultValue: .integer(Int64.min)),
                    AttributeDescription(
                        name: "s", type: .string, defaultValue: .string("a\n\tb & <c> \"q\" 'é'"),
                        minValue: .integer(1), maxValue: .integer(40), userInfo: ["k\n": "v\r&"]),
                    AttributeDescription(
                        name: "when", type: .date, defaultValue: .date(reference),
                        maxValue: .date(Date(timeIntervalSinceReferenceDate: -1))),
                    AttributeDescription(
                        name: "u", type: .uuid,
                        defaultValue: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)),
                    AttributeDescription(name: "b", type: .boolean, defaultValue: .boolean(true)),
                    AttributeDescription(name: "blob", type: .binaryData, allowsExternalBinaryDataStorage: true),
                    AttributeDescription(
                        name: "t", type: .transformable, isTransient: true,
                        valueTransformerName: "NSSecureUnarchiveFromData", renamingIdentifier: "old",
                        versionHashModifier: "v2"),
                    AttributeDescription(name: "link", type: .uri, defaultValue: .string("https://x.test/?a=1&b=2"))
                ],
                relationships: [
                    RelationshipDescription(
                        name: "alphas", destinationEntityName: "Alpha", inverseName: "zeta", isToMany: true,
                        isOrdered: true, minCount: 2, maxCount: 5, deleteRule: .deny, userInfo: ["r": "1"]),
                    RelationshipDescription(
                        name: "loose", destinationEntityName: "Alpha", isOptional: false, isTransient: true,
                        deleteRule: .noAction, renamingIdentifier: "was", versionHashModifier: "h")
                ],
                fetchedProperties: [
                    FetchedPropertyDescription(
                        name: "recent", destinationEntityName: "Alpha", predicateString: "n > 3 AND s == \"x\"",
                        userInfo: ["fp": "y"]),
                    FetchedPropertyDescription(
                        name: "all", destinationEntityName: "Alpha", predicateString: "", isOptional: false)
                ],
                userInfo: ["e": ""], uniquenessConstraints: [["d", "f"], ["s"]]),
            EntityDescription(
                name: "Alpha",
                attributes: [AttributeDescription(name: "n", type: .integer32)],
                relationships: [
                    RelationshipDescription(
                        name: "zeta", destinationEntityName: "Zeta", inverseName: "alphas", minCount: 1,
                        deleteRule: .cascade)
                ]),
            EntityDescription(name: "Beta", parentName: "Alpha")
        ],
        fetchRequestTemplates: [
            FetchRequestTemplate(name: "second", entityName: "Beta", predicateString: nil),
            FetchRequestTemplate(
                name: "first", entityName: "Alpha", predicateString: "n < 5",
                options: ["fetchLimit": "3", "resultType": "1"])
        ],
        configurations: [
            ModelConfiguration(name: "Empty", entityNames: []),
            ModelConfiguration(name: "Some", entityNames: ["Zeta", "Alpha"])
        ],
        versionIdentifier: "v 1.0 & more")
    let written = XcodeModelWriter.contents(of: model)
    #expect(
        written.hasPrefix(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\""
        ))
    #expect(written.contains("<attribute name=\"f\" attributeType=\"Float\""))  // required: no optional=
    #expect(written.contains("<attribute name=\"d\" optional=\"YES\" attributeType=\"Double\""))
    #expect(written.contains("defaultDateTimeInterval=\"12.3456789\""))
    let entityOrder = written.components(separatedBy: "\n").filter { $0.hasPrefix("    <entity ") }.map {
        $0.prefix(22)
    }
    #expect(entityOrder == ["    <entity name=\"Alph", "    <entity name=\"Beta", "    <entity name=\"Zeta"])
    let reloaded = try XcodeModelLoader.load(contents: Data(written.utf8), source: "written")
    #expect(reloaded == model)
    #expect(reloaded.entity(named: "Zeta")?.attribute(named: "s")?.defaultValue == .string("a\n\tb & <c> \"q\" 'é'"))
}

// MARK: - Malformed input

/// A fresh temporary folder for fixtures, removed by the caller.
private func temporaryFolder() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ModelLoaderTests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Writes `text` as `<folder>/<name>.xcdatamodel/contents` and returns the model folder.
@discardableResult
private func writeModel(_ text: String, named name: String = "Fixture", in folder: URL) throws -> URL {
    let model = folder.appendingPathComponent("\(name).xcdatamodel")
    try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
    try Data(text.utf8).write(to: model.appendingPathComponent("contents"))
    return model
}

private func wrapped(_ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="">
    \(body)
    </model>
    """
}

/// The error loading `url` gives; fails the test when it loads.
private func loadError(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) -> ObjectGraphError? {
    do {
        _ = try XcodeModelLoader.load(from: url)
        Issue.record("\(url.lastPathComponent) loaded but is malformed", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

private let malformedCases: [(label: String, text: String, expected: [String])] = [
    ("not XML", "this is not XML at all", ["line 1", "not well-formed XML", "is this an XML file?"]),
    (
        "truncated",
        "<?xml version=\"1.0\"?>\n<model type=\"x\">\n    <entity name=\"A\">\n        <attribute name=\"a\" attri",
        ["line 4", "not well-formed XML", "truncated"]
    ),
    ("empty", "", ["contains no XML element"]),
    (
        "root is not model", "<?xml version=\"1.0\"?>\n<plist version=\"1.0\"><dict/></plist>",
        ["line 2", "<plist>", "<model>"]
    ),
    ("entity without name", wrapped("<entity syncable=\"YES\"/>"), ["line 3", "<entity> has no name"]),
    (
        "attribute without name", wrapped("<entity name=\"Person\">\n<attribute attributeType=\"String\"/>\n</entity>"),
        ["line 4", "<attribute> in entity Person has no name"]
    ),
    (
        "unknown attribute type",
        wrapped("<entity name=\"Person\">\n<attribute name=\"age\" attributeType=\"Integer 12\"/>\n</entity>"),
        ["line 4", "<attribute name=\"age\"> in entity Person has unknown attributeType \"Integer 12\""]
    ),
    (
        "attribute without type", wrapped("<entity name=\"Person\">\n<attribute name=\"age\"/>\n</entity>"),
        ["<attribute name=\"age\"> in entity Person has no attributeType"]
    ),
    (
        "relationship without destination",
        wrapped("<entity name=\"Person\">\n<relationship name=\"pets\" toMany=\"YES\"/>\n</entity>"),
        ["line 4", "<relationship name=\"pets\"> in entity Person has no destinationEntity"]
    ),
    (
        "dangling destination",
        wrapped(
            "<entity name=\"Person\">\n<relationship name=\"pets\" toMany=\"YES\" destinationEntity=\"Pet\"/>\n</entity>"
        ), ["relationship Person.pets", "Pet"]
    ),
    (
        "dangling inverse",
        wrapped(
            "<entity name=\"Person\">\n<relationship name=\"pets\" toMany=\"YES\" destinationEntity=\"Pet\" inverseName=\"owner\"/>\n</entity>\n<entity name=\"Pet\"/>"
        ), ["relationship Person.pets", "inverse owner"]
    ),
    (
        "unknown deletion rule",
        wrapped(
            "<entity name=\"Person\">\n<relationship name=\"pets\" destinationEntity=\"Person\" deletionRule=\"Explode\"/>\n</entity>"
        ), ["<relationship name=\"pets\"> in entity Person", "deletionRule \"Explode\""]
    ),
    (
        "integer default out of range",
        wrapped(
            "<entity name=\"Person\">\n<attribute name=\"age\" attributeType=\"Integer 16\" defaultValueString=\"70000\"/>\n</entity>"
        ), ["line 4", "<attribute name=\"age\"> in entity Person", "defaultValueString \"70000\"", "Integer 16"]
    ),
    (
        "boolean default",
        wrapped(
            "<entity name=\"Person\">\n<attribute name=\"alive\" attributeType=\"Boolean\" defaultValueString=\"MAYBE\"/>\n</entity>"
        ), ["<attribute name=\"alive\"> in entity Person", "\"MAYBE\""]
    ),
    (
        "decimal default",
        wrapped(
            "<entity name=\"Person\">\n<attribute name=\"cash\" attributeType=\"Decimal\" defaultValueString=\"12abc\"/>\n</entity>"
        ), ["<attribute name=\"cash\"> in entity Person", "\"12abc\""]
    ),
    (
        "date default",
        wrapped(
            "<entity name=\"Person\">\n<attribute name=\"born\" attributeType=\"Date\" defaultDateTimeInterval=\"yesterday\"/>\n</entity>"
        ), ["<attribute name=\"born\"> in entity Person", "defaultDateTimeInterval \"yesterday\""]
    ),
    (
        "uuid default",
        wrapped(
            "<entity name=\"Person\">\n<attribute name=\"id\" attributeType=\"UUID\" defaultValueString=\"not-a-uuid\"/>\n</entity>"
        ), ["<attribute name=\"id\"> in entity Person", "\"not-a-uuid\""]
    ),
    (
        "bad flag",
        wrapped(
            "<entity name=\"Person\">\n<attribute name=\"age\" optional=\"maybe\" attributeType=\"String\"/>\n</entity>"
        ), ["<attribute name=\"age\"> in entity Person", "optional=\"maybe\""]
    ),
    ("missing parent", wrapped("<entity name=\"Person\" parentEntity=\"Mammal\"/>"), ["entity Person", "Mammal"])
]

@Test(arguments: malformedCases.indices)
func malformedContentsIsAnInvalidModelNamingFileAndElement(index: Int) throws {
    let (label, text, expected) = malformedCases[index]
    let folder = try temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let model = try writeModel(text, in: folder)
    let error = try #require(loadError(model), "\(label)")
    #expect(error.code == .invalidModel, "\(label)")
    #expect(error.message.hasPrefix(model.appendingPathComponent("contents").path + ": "), "\(label): \(error.message)")
    for fragment in expected {
        #expect(error.message.contains(fragment), "\(label): \(error.message) lacks \(fragment)")
    }
    // The Data entry point names the source it is given.
    #expect(throws: ObjectGraphError.self) {
        try XcodeModelLoader.load(contents: Data(text.utf8), source: "given/source")
    }
    do {
        _ = try XcodeModelLoader.load(contents: Data(text.utf8), source: "given/source")
    } catch {
        #expect(error.message.hasPrefix("given/source: "), "\(label): \(error.message)")
    }
}

@Test func missingContentsFileIsAnInvalidModel() throws {
    let folder = try temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let model = folder.appendingPathComponent("Empty.xcdatamodel")
    try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
    let error = try #require(loadError(model))
    #expect(error.code == .invalidModel)
    #expect(error.message == "\(model.appendingPathComponent("contents").path): no such file")
    let nowhere = try #require(loadError(folder.appendingPathComponent("Nowhere.xcdatamodeld")))
    #expect(nowhere.code == .invalidModel && nowhere.message.contains("Nowhere.xcdatamodeld"))
}

@Test func bundleWhoseCurrentVersionIsMissingIsAnInvalidModel() throws {
    let folder = try temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let bundle = folder.appendingPathComponent("Shop.xcdatamodeld")
    try writeModel(wrapped("<entity name=\"A\"/>"), named: "Shop", in: bundle)
    let plist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>Shop 2.xcdatamodel</string></dict></plist>
        """
    try Data(plist.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
    let error = try #require(loadError(bundle))
    #expect(error.code == .invalidModel)
    #expect(error.message.contains(bundle.appendingPathComponent(".xccurrentversion").path))
    #expect(error.message.contains("\"Shop 2.xcdatamodel\" does not exist"))
}

@Test func bundleWithoutCurrentVersionFileLoadsTheLastVersion() throws {
    let folder = try temporaryFolder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let bundle = folder.appendingPathComponent("Shop.xcdatamodeld")
    try writeModel(wrapped("<entity name=\"One\"/>"), named: "Shop", in: bundle)
    try writeModel(wrapped("<entity name=\"Nine\"/>"), named: "Shop 9", in: bundle)
    try writeModel(wrapped("<entity name=\"Ten\"/>"), named: "Shop 10", in: bundle)
    #expect(try XcodeModelLoader.versions(in: bundle).count == 3)
    let model = try XcodeModelLoader.load(from: bundle)
    #expect(model.entities.map(\.name) == ["Ten"])
}
