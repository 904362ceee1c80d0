import Foundation

/// Reads Xcode's model source format: a `.xcdatamodeld` bundle of versions, one `.xcdatamodel`
/// folder, or the `contents` XML inside it.
///
/// Everything the model types hold is read; layout (`<elements>`), code generation settings,
/// indexes and Spotlight flags are not part of the model and are skipped. Every malformed input
/// gives ``ObjectGraphError/Code/invalidModel`` with the file, the line and the element at fault.
/// Stateless; safe from any thread.
public enum XcodeModelLoader {
    /// Loads a `.xcdatamodeld` (the version named by .xccurrentversion's _XCCurrentVersionName, or
    /// the only/last version when that file is missing), a `.xcdatamodel` folder, or a `contents`
    /// file.
    public static func load(from url: URL) throws(ObjectGraphError) -> ManagedObjectModel {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ObjectGraphError(.invalidModel, "\(url.path): no such model file or folder")
        }
        guard isDirectory.boolValue else {
            return try load(contentsFile: url)
        }
        if url.pathExtension == "xcdatamodeld" || isModelBundle(url) {
            return try load(contentsFile: currentVersion(in: url).appendingPathComponent("contents"))
        }
        let contents = url.appendingPathComponent("contents")
        if !FileManager.default.fileExists(atPath: contents.path),
            FileManager.default.fileExists(atPath: url.appendingPathComponent("elements").path)
        {
            throw ObjectGraphError(
                .invalidModel,
                "\(url.path): a pre-Xcode 4 model (binary elements file, no contents); "
                    + "open it in Xcode and save it to convert it")
        }
        return try load(contentsFile: contents)
    }

    /// Loads `contents` XML; `source` names it in errors (a path).
    public static func load(contents: Data, source: String) throws(ObjectGraphError) -> ManagedObjectModel {
        let root = try XMLElementTree.parse(contents, source: source)
        return try XcodeContentsReader(source: source).model(from: root)
    }

    /// The versions a .xcdatamodeld holds, by name ("X 2.xcdatamodel" -> URL), for callers that
    /// pick one.
    public static func versions(in modelBundle: URL) throws(ObjectGraphError) -> [String: URL] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: modelBundle.path)
        } catch {
            throw ObjectGraphError(
                .invalidModel, "\(modelBundle.path): cannot list the model versions (\(error.localizedDescription))")
        }
        var result: [String: URL] = [:]
        for name in names where name.hasSuffix(".xcdatamodel") {
            result[name] = modelBundle.appendingPathComponent(name, isDirectory: true)
        }
        return result
    }

    // MARK: - Files

    private static func load(contentsFile url: URL) throws(ObjectGraphError) -> ManagedObjectModel {
        let data: Data
        do throws(ObjectGraphError) {
            data = try RegularFile.read(url, as: "models")
        } catch {
            guard error.code != .notFound else { throw ObjectGraphError(.invalidModel, "\(url.path): no such file") }
            throw ObjectGraphError(.invalidModel, error.message)
        }
        return try load(contents: data, source: url.path)
    }

    /// Whether `url` is a folder of `.xcdatamodel` versions even without the `.xcdatamodeld` name.
    static func isModelBundle(_ url: URL) -> Bool {
        let fileManager = FileManager.default
        if fileManager.fileExists(atPath: url.appendingPathComponent(".xccurrentversion").path) { return true }
        if fileManager.fileExists(atPath: url.appendingPathComponent("contents").path) { return false }
        let names = (try? fileManager.contentsOfDirectory(atPath: url.path)) ?? []
        return names.contains { $0.hasSuffix(".xcdatamodel") }
    }

    /// The version folder a bundle's `.xccurrentversion` names, or the last version by name
    /// (numbers compared as numbers, so "X 10" follows "X 9") when there is no such file.
    static func currentVersion(in bundle: URL) throws(ObjectGraphError) -> URL {
        let marker = bundle.appendingPathComponent(".xccurrentversion")
        if let data = FileManager.default.contents(atPath: marker.path) {
            let plist = try? PropertyListSerialization.propertyList(from: data, format: nil)
            guard let name = (plist as? [String: Any])?["_XCCurrentVersionName"] as? String, !name.isEmpty
            else {
                throw ObjectGraphError(
                    .invalidModel, "\(marker.path): not a property list with a _XCCurrentVersionName string")
            }
            let version = bundle.appendingPathComponent(name, isDirectory: true)
            guard FileManager.default.fileExists(atPath: version.path) else {
                throw ObjectGraphError(
                    .invalidModel,
                    "\(marker.path): current version \"\(name)\" does not exist in \(bundle.lastPathComponent); "
                        + "restore that folder or name an existing version")
            }
            return version
        }
        let versions = try versions(in: bundle)
        // Compare base names: with the extension, "X.xcdatamodel" would sort after "X 2.xcdatamodel".
        func baseName(_ name: String) -> String { String(name.dropLast(".xcdatamodel".count)) }
        guard
            let last = versions.keys.max(by: {
                baseName($0).compare(baseName($1), options: [.numeric]) == .orderedAscending
            })
        else {
            throw ObjectGraphError(.invalidModel, "\(bundle.path): holds no .xcdatamodel version")
        }
        return versions[last]!
    }
}
