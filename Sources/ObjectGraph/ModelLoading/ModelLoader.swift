import Foundation

/// Loads a model from any file or folder a user may name with `--model`: an Xcode
/// `.xcdatamodeld`/`.xcdatamodel`/`contents` (``XcodeModelLoader``) or a compiled `.momd`/`.mom`
/// (``CompiledModelLoader``), told apart by suffix and, for a bare file, by its first bytes.
///
/// Stateless; safe from any thread.
public enum ModelLoader {
    /// The model at `url` and anything its file held that storefs left out.
    public static func load(from url: URL) throws(ObjectGraphError) -> CompiledModelLoader.Decoded {
        if isCompiledModel(url) { return try CompiledModelLoader.load(from: url) }
        return CompiledModelLoader.Decoded(model: try XcodeModelLoader.load(from: url), notes: [])
    }

    /// Whether `url` names a compiled model: a `.mom` or `.momd`, a folder with a VersionInfo.plist
    /// or `.mom` files, or a file that is a binary property list.
    public static func isCompiledModel(_ url: URL) -> Bool {
        switch url.pathExtension.lowercased() {
        case "mom", "momd": return true
        case "xcdatamodeld", "xcdatamodel": return false
        default: break
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return false }
        if isDirectory.boolValue {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            return names.contains("VersionInfo.plist") || names.contains { $0.hasSuffix(".mom") }
        }
        guard let head = try? RegularFile.read(url, maxLength: 8, as: "models") else { return false }
        return BinaryPropertyList.looksLikeBinaryPropertyList(head)
    }
}
