import Foundation
import TestSupport
import Testing

@testable import ObjectGraph

/// Models, predicates and object names that once ended the process reading them (issue 11,
/// scripts/fuzz), read by the real loader and parser: each gives a clear error, never a signal.
@Suite struct HostileModelTests {
    /// A minimal model whose entity `Note` holds `body` after its attribute.
    static func model(_ body: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Note" representedClassName="Note" syncable="YES">
                <attribute name="title" optional="YES" attributeType="String"/>
                \(body)
            </entity>
        </model>
        """
    }

    static func expectInvalidModel(_ data: Data, _ words: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try XcodeModelLoader.load(contents: data, source: "hostile contents")
            Issue.record("the model loaded", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .invalidModel, sourceLocation: sourceLocation)
            #expect(error.message.hasPrefix("hostile contents: line "), "\(error)", sourceLocation: sourceLocation)
            for word in words { #expect(error.message.contains(word), "\(error)", sourceLocation: sourceLocation) }
        }
    }

    @Test(arguments: HostileInputs.names(in: "xcode-model"))
    func everyKeptModelLoadsOrIsRefusedWithAMessage(name: String) throws {
        let data = try Data(contentsOf: HostileInputs.url("xcode-model", name))
        do {
            let model = try XcodeModelLoader.load(contents: data, source: name)
            for entity in model.entities {
                for property in entity.fetchedProperties { _ = try? PredicateParser.parse(property.predicateString) }
            }
        } catch {
            #expect(error.code == .invalidModel && error.message.hasPrefix(name + ": "), "\(error)")
        }
    }

    @Test func modelWithInvalidUTF8InAnElementNameIsAClearError() throws {
        // FoundationXML force-unwraps the decoding of element names: this ended the process.
        let data = try Data(contentsOf: HostileInputs.url("xcode-model", "invalid-utf8-element-name.contents"))
        Self.expectInvalidModel(data, ["line 5:", "not valid UTF-8"])
        var bytes = [UInt8](Self.model("").utf8)
        bytes.insert(contentsOf: [0xC3, 0x28], at: bytes.count - 20)  // a lead byte without its continuation
        Self.expectInvalidModel(Data(bytes), ["not valid UTF-8"])
    }

    @Test func modelNested200000ElementsDeepIsAClearError() {
        let deep = String(repeating: "<userInfo>", count: 200_000) + String(repeating: "</userInfo>", count: 200_000)
        Self.expectInvalidModel(Data(Self.model(deep).utf8), ["nest more than \(XMLInputCheck.maximumDepth) levels"])
    }

    @Test func modelNestedToTheLimitStillLoads() throws {
        // <model><entity><userInfo>... : the root and the entity take two of the levels.
        let levels = XMLInputCheck.maximumDepth - 2
        let nested = String(repeating: "<x>", count: levels) + String(repeating: "</x>", count: levels)
        let model = try XcodeModelLoader.load(contents: Data(Self.model(nested).utf8), source: "limit")
        #expect(model.entities.map(\.name) == ["Note"])
    }

    @Test func modelOfMoreThan64MiBIsAClearError() {
        let data = Data(count: XMLInputCheck.maximumModelSize + 1)
        do {
            _ = try XcodeModelLoader.load(contents: data, source: "huge")
            Issue.record("a 64 MiB model loaded")
        } catch {
            #expect(error.code == .invalidModel && error.message.contains("too large"), "\(error)")
        }
    }

    @Test func inheritanceDeeperThanTheLimitIsAClearError() {
        let depth = ManagedObjectModel.maximumInheritanceDepth + 1
        let entities = (0...depth).map { EntityDescription(name: "E\($0)", parentName: $0 == 0 ? nil : "E\($0 - 1)") }
        #expect(throws: ObjectGraphError.self) { try ManagedObjectModel(entities: entities) }
        let deepest = Array(entities.prefix(ManagedObjectModel.maximumInheritanceDepth + 1))
        #expect((try? ManagedObjectModel(entities: deepest))?.entities.count == deepest.count)
    }

    // MARK: - Predicates

    @Test(arguments: HostileInputs.names(in: "predicate"))
    func everyKeptPredicateParsesOrIsRefusedWithAMessage(name: String) throws {
        let text = String(decoding: try Data(contentsOf: HostileInputs.url("predicate", name)), as: UTF8.self)
        do {
            let predicate = try PredicateParser.parse(text)
            #expect(try PredicateParser.parse(predicate.description) == predicate)
        } catch {
            #expect(error.code == .invalidModel && error.message.contains("at position"), "\(error)")
        }
    }

    /// A predicate nested far too deep, and the 1-based position of the token that goes one
    /// level past the limit.
    struct DeepPredicate: Sendable, CustomTestStringConvertible {
        var kind: String
        var text: String
        var failingPosition: Int
        var testDescription: String { kind }
    }

    static let deepPredicates: [DeepPredicate] = {
        let n = 50_000
        let limit = PredicateParser.maximumNesting
        return [
            DeepPredicate(
                kind: "parentheses",
                text: String(repeating: "(", count: n) + "TRUEPREDICATE" + String(repeating: ")", count: n),
                failingPosition: limit + 1),
            DeepPredicate(
                kind: "NOTs", text: String(repeating: "NOT ", count: n) + "TRUEPREDICATE",
                failingPosition: limit * 4 + 1),
            DeepPredicate(
                kind: "!s", text: String(repeating: "!", count: n) + "TRUEPREDICATE", failingPosition: limit + 1),
            DeepPredicate(
                kind: "aggregates",
                text: "name IN " + String(repeating: "{", count: n) + "1" + String(repeating: "}", count: n),
                failingPosition: 8 + limit + 1)
        ]
    }()

    @Test(arguments: deepPredicates)
    func predicateNested50000DeepIsAClearError(_ deep: DeepPredicate) {
        // Parsing recursed once per level and overflowed the stack (issue 11).
        do {
            _ = try PredicateParser.parse(deep.text)
            Issue.record("a predicate of 50,000 nested \(deep.kind) parsed")
        } catch {
            #expect(error.code == .invalidModel, "\(error)")
            #expect(error.message.contains("nests more than \(PredicateParser.maximumNesting) levels"), "\(error)")
            #expect(error.message.contains("at position \(deep.failingPosition):"), "\(error)")
        }
    }

    @Test func predicateNestedToTheLimitParsesAndEvaluates() throws {
        let n = PredicateParser.maximumNesting
        let text = String(repeating: "(", count: n) + "firstName == 'A'" + String(repeating: ")", count: n)
        let predicate = try PredicateParser.parse(text)
        let coordinator = makeSampleCoordinator()
        let context = coordinator.newContext()
        _ = try insertSmallCompany(context, employees: 2)
        #expect(try context.objects(matching: predicate, of: coordinator.model.id("Employee")).isEmpty)
    }

    @Test func fetchedPropertyNested50000DeepIsLeftOutOfTheModelItComesIn() throws {
        // A kept model reaches the parser when a store mounts: it must load, and its predicate fail.
        let deep = String(repeating: "(", count: 50_000) + "title == 'a'" + String(repeating: ")", count: 50_000)
        let model = try XcodeModelLoader.load(
            contents: Data(
                Self.model(
                    "<fetchedProperty name=\"deep\" optional=\"YES\"><fetchRequest name=\"f\" entity=\"Note\" "
                        + "predicateString=\"\(deep)\"/></fetchedProperty>"
                ).utf8), source: "kept model")
        let property = try #require(model.entities.first?.fetchedProperties.first)
        #expect(throws: ObjectGraphError.self) { try PredicateParser.parse(property.predicateString) }
    }

    // MARK: - Names

    @Test func objectNamesHaveExactlyOneSpelling() {
        #expect(PrimaryKey(reference: "p12") == PrimaryKey(12))
        #expect(PrimaryKey(reference: "p9223372036854775807") == PrimaryKey(Int64.max))
        for name in [
            "p012", "p0", "p00", "p+12", "p-12", "p 12", "p12 ", "P12", "p", "", "p9223372036854775808",
            "p1٣", "p１２", "p12\0", "pp12", "12"
        ] {
            #expect(PrimaryKey(reference: name) == nil, "\(name.debugDescription) names an object")
        }
        #expect(ObjectURI("x-coredata://ABC/Employee/p012") == nil)
        #expect(ObjectURI("x-coredata://ABC/Employee/p12")?.key == PrimaryKey(12))
    }
}
