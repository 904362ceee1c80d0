import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Every answer a tool gets is kept: a call that returns 0 changed the store (checked after
/// unmounting, through a fresh engine), and a change that cannot be kept fails at a call the tool
/// checks (write, close, fsync, symlink) with the store unchanged. What the tools do here (the
/// shell's printf, truncate(1), vim) needs a real mount; the mapping's own answers (links, newlines,
/// deletes, values too big) are kernel-free in StoreFSTests' WriteMappingTests.
@Suite(.serialized) struct KeptAnswersTests {
    func stored(_ mount: MountedStore, _ entity: String, _ key: Int64, _ attribute: String) throws -> AttributeValue? {
        let engine = try mount.engine()
        defer { engine.close() }
        let context = engine.newContext()
        let id = try #require(try context.objectID(forKey: PrimaryKey(key), in: engine.model.entityID(named: entity)!))
        return try context.value(of: attribute, for: id)
    }

    /// Text no continuation can make valid fails at write(2); a value still invalid at close fails
    /// close(2); either way the stored value is unchanged. Editors' truncate-then-write still works.
    @Test func invalidValuesFailAtWriteOrClose() throws {
        let mount = try MountedStore(objects: 300)
        defer { try? mount.unmount() }
        let e = "\(mount.path)/Employee/p20"
        let level = try run("cat", ["\(e)/level"]).output
        // printf is a shell builtin: its write(2) fails and it says so; the shell ignores close.
        let abc = try run("bash", ["-c", "printf abc > \(e)/level"])
        #expect(abc.status != 0 && abc.error.contains("Invalid argument"), "printf abc: \(abc.status) \(abc.error)")
        // truncate(1) checks close(2), where the empty value is refused.
        let truncated = try run("truncate", ["-s", "0", "\(e)/level"])
        #expect(
            truncated.status != 0 && truncated.error.contains("Invalid argument"), "truncate -s 0: \(truncated.error)")
        let notUTF8 = try run("bash", ["-c", "printf 'a\\377b' > \(e)/lastName"])
        #expect(
            notUTF8.status != 0 && notUTF8.error.contains("Invalid argument"),
            "bytes that are not UTF-8: \(notUTF8.error)")
        #expect(try run("cat", ["\(e)/level"]).output == level)
        // A number written in pieces, and a truncate followed by a write, are fine; appending to
        // the text a number reads as (with its newline) makes no number.
        let pieces =
            "import os; fd=os.open('\(e)/level', os.O_WRONLY|os.O_TRUNC); os.write(fd, b'1'); os.write(fd, b'0\\n'); os.close(fd)"
        #expect(try run("python3", ["-c", pieces]).status == 0)
        #expect(try run("cat", ["\(e)/level"]).output == "10\n")
        #expect(try run("bash", ["-c", "printf 3 >> \(e)/level"]).status != 0, "10\\n3 is no number")
        #expect(try run("cat", ["\(e)/level"]).output == "10\n")
        #expect(
            try run(
                "python3",
                [
                    "-c",
                    "import os; fd=os.open('\(e)/level', os.O_RDWR); os.ftruncate(fd, 0); os.write(fd, b'9\\n'); os.close(fd)"
                ]
            ).status == 0)
        #expect(try run("vim", ["-e", "-s", "-c", "%s/.*/8/", "-c", "wq", "\(e)/level"]).status == 0)
        try mount.unmount()
        #expect(try stored(mount, "Employee", 20, "level") == .integer(8))
    }
}
