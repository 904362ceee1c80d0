import Foundation
import Testing

@testable import ObjectGraph

/// Composite attributes in models: what a hostile or careless model file gets (an error naming
/// what is wrong, never a crash), and what a model keeps of them through its writers.
@Suite struct CompositeModelTests {
    static func model(_ body: String) throws -> ManagedObjectModel {
        let text = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">\(body)</model>
            """
        return try XcodeModelLoader.load(contents: Data(text.utf8), source: "test")
    }

    @Test(arguments: [
        // A composite type that names itself: bounded, not endless.
        (
            #"<entity name="E"><attribute name="a" attributeType="Composite" composite="Loop"/></entity><composite name="Loop"><attribute name="x" attributeType="Composite" composite="Loop"/></composite>"#,
            "deep"
        ),
        (
            #"<entity name="E"><attribute name="a" attributeType="Composite" composite="Missing"/></entity>"#,
            "does not declare"
        ),
        (#"<entity name="E"><attribute name="a" attributeType="Composite"/></entity>"#, "names no composite"),
        (
            #"<entity name="E"><attribute name="a" attributeType="Composite" composite="T"/></entity><composite name="T"><attribute name="b.c" attributeType="String"/></composite>"#,
            "element named"
        ),
        (
            #"<entity name="E"><attribute name="a" attributeType="Composite" composite="T"/></entity><composite name="T"><attribute name="x" attributeType="String"/><attribute name="x" attributeType="String"/></composite>"#,
            "two elements"
        ),
        (
            #"<entity name="E"><attribute name="a" attributeType="String"/><attribute name="a" attributeType="Composite" composite="T"/></entity><composite name="T"><attribute name="x" attributeType="String"/></composite>"#,
            "two properties"
        )
    ])
    func malformedCompositesAreRefusedWithAReason(_ body: String, _ reason: String) {
        do {
            _ = try Self.model(body)
            Issue.record("accepted: \(body)")
        } catch {
            let message = (error as? ObjectGraphError)?.message ?? "\(error)"
            #expect(message.contains(reason), "\(message)")
        }
    }

    /// Written as Xcode XML and as a model cache, a model with nested composites reads back with
    /// the same composites, leaves and hashes.
    @Test func compositesSurviveTheWriters() throws {
        let model = try Self.model(
            #"""
            <entity name="E"><attribute name="id" attributeType="UUID"/>
            <attribute name="a" optional="YES" attributeType="Composite" composite="A"/></entity>
            <composite name="A"><attribute name="id" optional="YES" attributeType="UUID"/>
            <attribute name="inner" attributeType="Composite" composite="B"/></composite>
            <composite name="B"><attribute name="n" attributeType="Integer 16" defaultValueString="3"/></composite>
            """#)
        let entity = try #require(model.entity(named: "E"))
        #expect(entity.allAttributes.map(\.name) == ["a.id", "a.inner.n", "id"])
        #expect(entity.compositePaths == ["a", "a.inner"])
        let xml = try XcodeModelLoader.load(
            contents: Data(XcodeModelWriter.contents(of: model).utf8), source: "round trip")
        #expect(xml.entity(named: "E")?.allAttributes == entity.allAttributes)
        let cache = try #require(CompiledModelEncoder.encode(model))
        let decoded = try CompiledModelLoader.decode(archive: cache, source: "cache").model
        #expect(decoded.entity(named: "E")?.allAttributes.map(\.name) == entity.allAttributes.map(\.name))
        #expect(VersionHash.entityHashes(of: decoded) == VersionHash.entityHashes(of: model))
        #expect(VersionHash.entityHashes(of: xml) == VersionHash.entityHashes(of: model))
    }
}
