import Foundation
import Logging
import ObjectGraph
import BinaryStore
import PostgresStore
import SQLiteStore
import XMLStore

/// The store types the CLI knows, and how `--model` and `--type` are read.
enum StoreTypes {
    static let all: [any PersistentStoreType] = [
        SQLiteStoreType(), XMLStoreType(), BinaryStoreType(), PostgresStoreType()
    ]

    /// The store a STORE argument names: a `postgresql://` (or `postgres://`) URL as given,
    /// anything else a file path.
    static func location(_ argument: String) -> URL {
        let lowered = argument.lowercased()
        if PostgresLocation.schemes.contains(where: { lowered.hasPrefix($0 + "://") }), let url = URL(string: argument)
        {
            return url
        }
        return URL(fileURLWithPath: argument)
    }

    /// Whether the store at `url` exists (a file, or a store on a server, asked of its type).
    static func exists(_ url: URL) throws -> Bool {
        guard StoreURL.isService(url) else { return FileManager.default.fileExists(atPath: url.path) }
        return try PersistentStoreCoordinator.storeType(for: url, among: all).storeExists(at: url)
    }

    /// A model from `--model`, with what `storefs info` says about where it came from.
    struct LoadedModel {
        var model: ManagedObjectModel
        var source: ModelSource
    }

    /// The model at `path`, or nil for no path: `sample` (the built-in sample model), an Xcode
    /// `.xcdatamodeld`/`.xcdatamodel`/`contents`, a compiled `.momd`/`.mom`, or another store (its
    /// model: the one it keeps, its Core Data cache, or what its type infers).
    static func loadModel(at path: String?, logger: Logger? = nil) throws -> LoadedModel? {
        guard let path else { return nil }
        if path == "sample" && !FileManager.default.fileExists(atPath: path) {
            return LoadedModel(model: SampleModel.make(), source: .given("the built-in sample model (--model sample)"))
        }
        let url = URL(fileURLWithPath: path)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.invalidModel, "\(path): no such model file, folder or store")
        }
        if isStore(url) {
            let coordinator = try PersistentStoreCoordinator.open(
                at: url, types: all, options: StoreOptions(readOnly: true))
            defer { coordinator.close() }
            return LoadedModel(
                model: coordinator.model,
                source: .given("the model of store \(path) (\(coordinator.modelSource.description)), from --model"))
        }
        let loaded = try ModelLoader.load(from: url)
        for note in loaded.notes { logger?.notice("\(note)") }
        let kind = ModelLoader.isCompiledModel(url) ? "compiled model" : "Xcode model"
        return LoadedModel(model: loaded.model, source: .given("\(kind) \(path), from --model"))
    }

    /// Every version of the model at `path`, for a model migration: a bundle's versions
    /// (`.xcdatamodeld`, `.momd`), else the one model `path` names (an Xcode or compiled model, a
    /// store's model, `sample`).
    static func loadVersions(at path: String, logger: Logger? = nil) throws -> ModelVersions {
        let url = URL(fileURLWithPath: path)
        if (path == "sample" && !FileManager.default.fileExists(atPath: path)) || isStore(url) {
            guard let loaded = try loadModel(at: path, logger: logger) else {
                throw ObjectGraphError(.invalidModel, "no model at \(path)")
            }
            return ModelVersions(
                single: loaded.model, name: url.deletingPathExtension().lastPathComponent, source: path)
        }
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.invalidModel, "\(path): no such model file, folder or store")
        }
        var notes: [String] = []
        let versions = try ModelVersions.load(from: url, notes: &notes)
        for note in notes { logger?.notice("\(note)") }
        return versions
    }

    /// The model at `path` alone (see ``loadModel(at:logger:)``).
    static func model(at path: String?) throws -> ManagedObjectModel? {
        try loadModel(at: path)?.model
    }

    /// Whether `url` is a store file rather than a model: a file (models are folders, or
    /// `contents`/`.mom` files) that a store type claims by suffix or by content.
    static func isStore(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            !ModelLoader.isCompiledModel(url)
        else { return false }
        let suffix = url.pathExtension.lowercased()
        if all.contains(where: { $0.fileExtensions.contains(suffix) }) { return true }
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return false }
        defer { try? handle.close() }
        let start = (try? handle.read(upToCount: PersistentStoreCoordinator.recognitionLength)) ?? Data()
        return all.contains { $0.recognizes(fileStart: start) }
    }

    /// The type `--type` names: `sqlite`, `xml` or `binary` (a type name or one of its suffixes).
    static func type(named name: String?) throws -> (any PersistentStoreType)? {
        guard let name else { return nil }
        let lowered = name.lowercased()
        guard let found = all.first(where: { $0.name.lowercased() == lowered || $0.fileExtensions.contains(lowered) })
        else {
            throw ObjectGraphError(
                .unsupported,
                "unknown store type \(name); use sqlite, xml or binary (a PostgreSQL store is named by its postgresql:// URL)"
            )
        }
        return found
    }
}
