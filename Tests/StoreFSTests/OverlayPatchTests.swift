import Foundation
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// A patch is a file anyone can edit: replaying it (`storefs apply`) refuses what a mount would
/// have refused, with the mount's own rules (``ChangeRules``, ``ChangeValidation``).
@Suite struct OverlayPatchTests {
    static func patch(objects: String = "[]", toMany: String = "[]", metadata: String = "{}") throws -> OverlayPatch {
        let text = """
            {"storefs": "patch", "version": 1, "store": "Company.sqlite", "storeUUID": "", "read": [], "written": "",
             "objects": \(objects), "toMany": \(toMany), "metadata": \(metadata), "unsaved": []}
            """
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("patch-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try OverlayPatch.read(url)
    }

    static func refusal(_ patch: OverlayPatch) -> ObjectGraphError? {
        do {
            _ = try patch.request(for: SampleModel.make(), metadata: StoreMetadata())
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: ["StoreFSModel", "NSStoreModelVersionHashes", "NSStoreUUID", "NSStoreType", "StoreFSKeys"])
    func theStoresOwnMetadataIsRefused(key: String) throws {
        let set = Self.refusal(try Self.patch(metadata: #"{"\#(key)": {"string": "<model/>"}}"#))
        #expect(set?.code == .notPermitted, "\(String(describing: set))")
        let removed = Self.refusal(try Self.patch(metadata: #"{"\#(key)": null}"#))
        #expect(removed?.code == .notPermitted, "\(String(describing: removed))")
    }

    @Test func customMetadataAndSavedQueriesAreApplied() throws {
        let request = try Self.patch(metadata: #"{"reviewer": {"string": "Ada"}}"#).request(
            for: SampleModel.make(), metadata: StoreMetadata())
        #expect(request.metadata?["reviewer"] == .string("Ada"))
    }

    /// A key a mount cannot show (mkdir refuses it) would leave the store's highest key at
    /// Int64.max: no object could be made after it.
    @Test(arguments: ["p9223372036854775807", "p4294967296"])
    func anInsertOfAKeyAMountCannotShowIsRefused(key: String) throws {
        let error = Self.refusal(
            try Self.patch(
                objects: """
                    [{"object": "Employee/\(key)", "change": "inserted",
                      "attributes": {"firstName": {"to": {"text": "Big"}}, "lastName": {"to": {"text": "Key"}}}, "toOne": {}}]
                    """))
        #expect(error?.message.contains("not a key storefs can show") == true, "\(String(describing: error))")
    }

    @Test func anInsertIsCheckedAsAMountsSaveChecksIt() throws {
        let abstract = Self.refusal(
            try Self.patch(
                objects: #"[{"object": "Person/p5000", "change": "inserted", "attributes": {}, "toOne": {}}]"#))
        #expect(abstract?.message.contains("abstract") == true, "\(String(describing: abstract))")
        let incomplete = Self.refusal(
            try Self.patch(
                objects: """
                    [{"object": "Employee/p5000", "change": "inserted",
                      "attributes": {"firstName": {"to": {"text": "Ada"}}}, "toOne": {}}]
                    """))
        #expect(incomplete?.message.contains("lastName") == true, "\(String(describing: incomplete))")
    }

    @Test func anUpdateIsCheckedForWhatItSetsOnly() throws {
        let tooHigh = Self.refusal(
            try Self.patch(
                objects: """
                    [{"object": "Employee/p6", "change": "updated", "version": 1,
                      "attributes": {"level": {"to": {"text": "99"}, "from": {"text": "3"}}}, "toOne": {}}]
                    """))
        #expect(tooHigh?.code == .validation, "\(String(describing: tooHigh))")
        // The other mandatory values are the store's: an update that does not name them is applied.
        let fine = try Self.patch(
            objects: """
                [{"object": "Employee/p6", "change": "updated", "version": 1,
                  "attributes": {"lastName": {"to": {"text": "Hopper"}, "from": {"text": "Backus"}}}, "toOne": {}}]
                """
        ).request(for: SampleModel.make(), metadata: StoreMetadata())
        #expect(fine.updated.count == 1)
    }

    /// The mount refuses the same keys, set or removed (setfattr -x user.StoreFSModel lost the
    /// kept model at the next open).
    @Test(arguments: ["StoreFSModel", "NSStoreModelVersionHashes", "NSStoreUUID"])
    func aMountRefusesTheSameMetadataKeys(key: String) throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(errnoOf { try k.setxattr("", "user.\(key)", Data("x".utf8)) } == EPERM)
        #expect(errnoOf { try k.removexattr("", "user.\(key)") } == EPERM)
        #expect(errnoOf { try k.setxattr("", "user.reviewer", Data("Ada".utf8)) } == nil)
        #expect(errnoOf { try k.removexattr("", "user.reviewer") } == nil)
        #expect(mount.finish().isEmpty)
    }
}
