import Foundation

/// Every version of a model as an app ships them: the `.xcdatamodel` folders of a `.xcdatamodeld`
/// bundle, the `.mom` files of a compiled `.momd`, or a single model (one version). A staged
/// migration finds a store's version among them by its entity version hashes and migrates it one
/// version at a time to the current one.
///
/// Versions are ordered by name, numbers compared as numbers (`Model`, `Model 2`, ..., `Model 10`),
/// the order Xcode's "Add Model Version" names them in; the current version is the one the
/// bundle names (`.xccurrentversion`, `VersionInfo.plist`), or the version a path inside the
/// bundle names (`Model.xcdatamodeld/Model 3.xcdatamodel`: migrate to that version).
///
/// Threading: a value; share it freely.
public struct ModelVersions: Sendable {
    public struct Version: Sendable {
        /// The version's name: its folder or file name without the suffix (`Model 2`).
        public var name: String
        public var model: ManagedObjectModel
        /// Core Data's entity version hashes of the version, by entity name.
        public var hashes: [String: Data]

        public init(name: String, model: ManagedObjectModel, hashes: [String: Data]) {
            self.name = name
            self.model = model
            self.hashes = hashes
        }
    }

    /// Where the versions came from, for messages.
    public var source: String
    /// In version order.
    public var versions: [Version]
    public var currentName: String

    public var current: Version { versions.first { $0.name == currentName } ?? versions[versions.count - 1] }

    /// One model as the only version.
    public init(single model: ManagedObjectModel, name: String, source: String) {
        self.source = source
        self.versions = [Version(name: name, model: model, hashes: VersionHash.entityHashes(of: model))]
        self.currentName = name
    }

    init(source: String, versions: [Version], currentName: String) {
        self.source = source
        self.versions = versions.sorted { $0.name.compare($1.name, options: [.numeric]) == .orderedAscending }
        self.currentName = currentName
    }

    /// The version whose entity hashes are `hashes`, if one is.
    public func version(matching hashes: [String: Data]) -> Version? {
        versions.first { $0.hashes == hashes }
    }

    /// The versions of a `.xcdatamodeld`, a `.momd`, or the one model a `.xcdatamodel`, `.mom` or
    /// `contents` file holds. Notes about what a compiled model held that storefs leaves out go
    /// to `notes`.
    public static func load(from url: URL, notes: inout [String]) throws(ObjectGraphError) -> ModelVersions {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ObjectGraphError(.invalidModel, "\(url.path): no such model file or folder")
        }
        let name = url.deletingPathExtension().lastPathComponent
        // A version inside a bundle names the bundle's versions, with that one as the target.
        let parent = url.deletingLastPathComponent()
        // Only a real bundle: a folder that merely holds model folders is no version sequence.
        let isBundle =
            parent.pathExtension == "xcdatamodeld"
            || FileManager.default.fileExists(atPath: parent.appendingPathComponent(".xccurrentversion").path)
        if (url.pathExtension == "xcdatamodel" && isBundle)
            || (url.pathExtension == "mom" && parent.pathExtension == "momd")
        {
            var versions = try load(from: parent, notes: &notes)
            guard versions.versions.contains(where: { $0.name == name }) else {
                throw ObjectGraphError(.invalidModel, "\(url.path) is not one of the versions of \(parent.path)")
            }
            versions.currentName = name
            return versions
        }
        if ModelLoader.isCompiledModel(url) {
            guard isDirectory.boolValue else {
                let decoded = try CompiledModelLoader.load(from: url)
                notes += decoded.notes
                return ModelVersions(single: decoded.model, name: name, source: url.path)
            }
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).filter {
                $0.hasSuffix(".mom")
            }
            guard !files.isEmpty else { throw ObjectGraphError(.invalidModel, "\(url.path): no .mom model inside") }
            var versions: [Version] = []
            for file in files {
                let decoded = try CompiledModelLoader.load(from: url.appendingPathComponent(file))
                notes += decoded.notes
                versions.append(
                    Version(
                        name: String(file.dropLast(".mom".count)), model: decoded.model,
                        hashes: VersionHash.entityHashes(of: decoded.model)))
            }
            let current = try CompiledModelLoader.currentVersion(in: url).deletingPathExtension().lastPathComponent
            return ModelVersions(source: url.path, versions: versions, currentName: current)
        }
        guard isDirectory.boolValue, url.pathExtension == "xcdatamodeld" || XcodeModelLoader.isModelBundle(url) else {
            return ModelVersions(single: try XcodeModelLoader.load(from: url), name: name, source: url.path)
        }
        var versions: [Version] = []
        for (folder, location) in try XcodeModelLoader.versions(in: url) {
            let model = try XcodeModelLoader.load(from: location)
            versions.append(
                Version(
                    name: String(folder.dropLast(".xcdatamodel".count)), model: model,
                    hashes: VersionHash.entityHashes(of: model)))
        }
        guard !versions.isEmpty else {
            throw ObjectGraphError(.invalidModel, "\(url.path): holds no .xcdatamodel version")
        }
        let current = try XcodeModelLoader.currentVersion(in: url).deletingPathExtension().lastPathComponent
        return ModelVersions(source: url.path, versions: versions, currentName: current)
    }
}
