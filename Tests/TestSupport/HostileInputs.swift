import Foundation

/// Inputs that once crashed or hung a reader of storefs, kept so that they never do again:
/// `Tests/Fixtures/hostile/<target>/`, one folder per fuzz target (Fuzz/Targets), each file named
/// for what it holds. scripts/fuzz also mutates them; its README says how each was made.
public enum HostileInputs {
    /// `Tests/Fixtures/hostile` of this checkout.
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/hostile").standardizedFileURL

    /// The kept input `name` of fuzz target `target` (`sqlite-store`, `xml-store`, ...).
    public static func url(_ target: String, _ name: String) -> URL {
        directory.appendingPathComponent(target).appendingPathComponent(name)
    }

    /// The names kept for `target`, sorted. Never empty: when the folder is missing or empty, the
    /// one name returned says so, so a parameterized test over it fails instead of passing with no
    /// cases.
    public static func names(in target: String) -> [String] {
        let path = directory.appendingPathComponent(target).path
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { !$0.hasPrefix(".") }
            .sorted()
        return names.isEmpty ? ["<no inputs in \(path): the hostile fixtures are missing from this checkout>"] : names
    }

    /// A copy of a kept input in a new temporary folder (opening a store may write beside it, and
    /// fixtures stay as they are); remove `folder` when done.
    public static func copy(_ target: String, _ name: String) throws -> (folder: URL, file: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hostile-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name)
        try FileManager.default.copyItem(at: url(target, name), to: file)
        return (folder, file)
    }
}
