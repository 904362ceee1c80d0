import Foundation

/// Reads compiled models: a `.mom` file (what Xcode's momc writes into an app bundle), a `.momd`
/// folder of versions, or the same keyed archive from elsewhere (the model Core Data caches in a
/// SQLite store, once its caller has inflated it).
///
/// Stateless; safe from any thread.
public enum CompiledModelLoader {
    /// The largest archive read: the biggest model in the corpus (Photos, 54 entities) is 1.4 MB;
    /// a bound keeps a hostile file from being read whole into memory.
    public static let maximumArchiveSize = 64 << 20

    /// A model and what its archive held that storefs left out (one line each, for the log).
    public struct Decoded: Sendable {
        public var model: ManagedObjectModel
        public var notes: [String]
    }

    /// Decodes a keyed archive of an `NSManagedObjectModel`; `source` names it in errors.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` saying what is wrong with the archive.
    public static func decode(archive data: Data, source: String) throws(ObjectGraphError) -> Decoded {
        guard data.count <= maximumArchiveSize else {
            throw ObjectGraphError(
                .invalidModel,
                "\(source): \(data.count) bytes, more than the \(maximumArchiveSize >> 20) MiB a model may have")
        }
        var decoder = CompiledModelDecoder(archive: try KeyedArchive(data: data, source: source))
        let result = try decoder.decode()
        return Decoded(model: result.model, notes: result.notes)
    }

    /// Loads a `.mom` file, or the current version of a `.momd` folder (the one its
    /// VersionInfo.plist names, or its only `.mom`).
    public static func load(from url: URL) throws(ObjectGraphError) -> Decoded {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ObjectGraphError(.invalidModel, "\(url.path): no such model file or folder")
        }
        let file = isDirectory.boolValue ? try currentVersion(in: url) : url
        return try decode(archive: try read(file), source: file.path)
    }

    /// The `.mom` a `.momd` folder's VersionInfo.plist names as current
    /// (`NSManagedObjectModel_CurrentVersionName`), or its only `.mom`.
    static func currentVersion(in folder: URL) throws(ObjectGraphError) -> URL {
        let info = folder.appendingPathComponent("VersionInfo.plist")
        if FileManager.default.fileExists(atPath: info.path) {
            let data = try read(info)
            let plist = try? PropertyListSerialization.propertyList(from: data, format: nil)
            guard let name = (plist as? [String: Any])?["NSManagedObjectModel_CurrentVersionName"] as? String,
                !name.isEmpty, !name.contains("/")
            else {
                throw ObjectGraphError(
                    .invalidModel, "\(info.path): not a property list naming NSManagedObjectModel_CurrentVersionName")
            }
            let file = folder.appendingPathComponent(name + ".mom")
            guard FileManager.default.fileExists(atPath: file.path) else {
                throw ObjectGraphError(
                    .invalidModel,
                    "\(info.path) names current version \"\(name)\", but \(folder.lastPathComponent) has no \(name).mom"
                )
            }
            return file
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
            $0.hasSuffix(".mom")
        }
        guard names.count == 1 else {
            throw ObjectGraphError(
                .invalidModel,
                names.isEmpty
                    ? "\(folder.path): no .mom model inside"
                    : "\(folder.path) holds \(names.count) versions (\(names.sorted().joined(separator: ", "))) and no VersionInfo.plist "
                        + "saying which is current; give the .mom file itself")
        }
        return folder.appendingPathComponent(names[0])
    }

    /// The entity version hashes a `.momd` folder's VersionInfo.plist records for its current
    /// version (`NSManagedObjectModel_VersionHashes`, which Xcode's momc computes when it compiles
    /// the model); nil when `url` is not such a folder or its plist records none.
    public static func recordedVersionHashes(in url: URL) -> [String: Data]? {
        let info = url.appendingPathComponent("VersionInfo.plist")
        guard FileManager.default.fileExists(atPath: info.path), let data = try? read(info),
            let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
            let name = plist["NSManagedObjectModel_CurrentVersionName"] as? String,
            let versions = plist["NSManagedObjectModel_VersionHashes"] as? [String: Any],
            let hashes = versions[name] as? [String: Any]
        else { return nil }
        return hashes.compactMapValues { $0 as? Data }
    }

    private static func read(_ url: URL) throws(ObjectGraphError) -> Data {
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        guard size <= maximumArchiveSize else {
            throw ObjectGraphError(
                .invalidModel,
                "\(url.path): \(size) bytes, more than the \(maximumArchiveSize >> 20) MiB a model may have")
        }
        let data = try RegularFile.read(url, maxLength: maximumArchiveSize + 1, as: "models")
        guard data.count <= maximumArchiveSize else {
            throw ObjectGraphError(
                .invalidModel, "\(url.path): more than the \(maximumArchiveSize >> 20) MiB a model may have")
        }
        return data
    }
}
