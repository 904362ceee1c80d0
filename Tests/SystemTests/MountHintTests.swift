import Foundation
import TestSupport
import Testing

/// A mount refused because the store is at another version of the model says the command that
/// migrates it, and that command works as written: with `--mapping` where a step needs a mapping
/// model (the mapping models beside the model, when they make the steps).
@Suite struct MountHintTests {
    /// The command the refusal gives, as written after "Migrate the store first: ".
    static func hint(_ error: String) -> String? {
        guard let start = error.range(of: "Migrate the store first: ") else { return nil }
        let rest = error[start.upperBound...]
        let end = rest.range(of: " (the step") ?? rest.range(of: " (a backup")
        return end.map { String(rest[..<$0.lowerBound]) }
    }

    @Test func theRefusedMountsHintNamesTheMappingAStepNeeds() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let binary = try storefsBinary()
        let store = scratch.path + "/Posts.sqlite"
        try FileManager.default.copyItem(
            atPath: Corpus.url("sqlite/wibosco_CoreDataMigration-Example_CoreDataMigration_Example_1.sqlite").path,
            toPath: store)
        let model = scratch.path + "/Posts.xcdatamodeld"
        try FileManager.default.copyItem(
            atPath: Corpus.url("models/wibosco_CoreDataMigration-Example_CoreDataMigration_Example.xcdatamodeld").path,
            toPath: model)
        // Version 2 → 3 makes Post.color a mandatory relationship: no store with posts migrates
        // without the step's mapping model.
        let refused = try run(binary, ["mount", store, scratch.mountPoint, "--model", model])
        #expect(refused.status != 0)
        #expect(refused.errorOutput.contains("--mapping MAPPING"), "\(refused.errorOutput)")
        #expect(refused.errorOutput.contains("Post.color"), "says why: \(refused.errorOutput)")
        // With the mapping model beside the model, the hint names it, and works as written.
        try FileManager.default.copyItem(
            atPath: packageRoot.appendingPathComponent(
                "Tests/Fixtures/migration/wibosco/Migration2to3WithoutPolicy.xcmappingmodel"
            ).path,
            toPath: scratch.path + "/Migration2to3WithoutPolicy.xcmappingmodel")
        let again = try run(binary, ["mount", store, scratch.mountPoint, "--model", model])
        let command = try #require(Self.hint(again.errorOutput), "\(again.errorOutput)")
        #expect(command.contains("--mapping \(scratch.path)"), "\(command)")
        let followed = try shell(command.replacingOccurrences(of: "storefs ", with: quoted(binary) + " "))
        #expect(followed.succeeded, "\(command): \(followed.errorOutput)")
        let info = try run(binary, ["info", store, "--model", model])
        #expect(info.output.contains("all 2 entities match"), "\(info.output)")
    }
}
