import Foundation

/// The real Core Data files the tests read: `Tests/Fixtures/corpus`, copied byte for byte from
/// public repositories (its README names each file's source, commit and licence). They live in the
/// repository so that a clone alone passes its tests. Treat them as read-only: copy a store before
/// opening it (opening a WAL store checkpoints and deletes its -wal file).
public enum Corpus {
    /// `Tests/Fixtures/corpus` of this checkout.
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/corpus").standardizedFileURL

    /// A file or folder of the corpus, e.g. `sqlite/magicalpanda_MagicalRecord_Recipes.sqlite`.
    public static func url(_ relativePath: String) -> URL { directory.appendingPathComponent(relativePath) }

    /// A writable copy of SQLite store `name` of the corpus (and its WAL) in `folder`.
    public static func copy(sqlite name: String, into folder: URL) throws -> URL {
        let source = url("sqlite/\(name)")
        for suffix in ["", "-wal"] {
            let from = URL(fileURLWithPath: source.path + suffix)
            guard FileManager.default.fileExists(atPath: from.path) else { continue }
            let to = folder.appendingPathComponent(name + suffix)
            try FileManager.default.copyItem(at: from, to: to)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: to.path)
        }
        return folder.appendingPathComponent(name)
    }

    /// The names in corpus folder `folder` (`sqlite`, `models`, `xml`), sorted; `matching` filters
    /// them. Never empty: when the folder is missing or nothing matches, the one name returned says
    /// so, so a parameterized test over it fails on that case instead of passing with no cases.
    public static func names(in folder: String, matching: (String) -> Bool = { _ in true }) -> [String] {
        let path = directory.appendingPathComponent(folder).path
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter(matching).sorted()
        return names.isEmpty ? ["<no fixtures in \(path): the corpus is missing from this checkout>"] : names
    }
}
