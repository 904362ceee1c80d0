import ArgumentParser
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

    /// Whether a STORE argument names a store on a server: a `postgresql://` (or `postgres://`) URL.
    static func namesService(_ argument: String) -> Bool {
        let lowered = argument.lowercased()
        return PostgresLocation.schemes.contains { lowered.hasPrefix($0 + "://") }
    }

    /// The store a STORE argument names: a `postgresql://` (or `postgres://`) URL as given,
    /// anything else a file path. Every command reads its STORE arguments through here, so each
    /// takes a URL wherever it takes a store.
    ///
    /// - Throws: `ValidationError` for a URL that does not parse (shown with its password masked:
    ///   ``StoreURL/redacting(_:)``) and for a file that exists but is not a regular file (a FIFO
    ///   would block every open: ``RegularFile``); a folder passes when `allowingFolder` (a folder
    ///   of stores, a model bundle).
    static func location(_ argument: String, allowingFolder: Bool = false) throws -> URL {
        if namesService(argument) {
            guard let url = URL(string: argument), url.scheme != nil else {
                throw ValidationError(
                    "\(StoreURL.redacting(argument)) is not a URL storefs can read (postgresql://user@host/database?schema=NAME; characters such as spaces are written %20)"
                )
            }
            return url
        }
        let url = URL(fileURLWithPath: argument)
        var isFolder: ObjCBool = false
        if allowingFolder && FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder)
            && isFolder.boolValue
        {
            return url
        }
        do {
            try RegularFile.check(url)
        } catch {
            throw ValidationError(error.message)
        }
        return url
    }

    /// The store a STORE argument names (``location(_:allowingFolder:)``), which must exist.
    static func existingStore(_ argument: String) throws -> URL {
        let url = try location(argument)
        guard try exists(url) else { throw ValidationError("\(StoreURL.redacting(argument)) does not exist") }
        return url
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
        let url = try location(path, allowingFolder: true)
        guard try exists(url) else {
            throw ObjectGraphError(.invalidModel, "\(StoreURL.redacting(path)): no such model file, folder or store")
        }
        if isStore(url) {
            let coordinator = try PersistentStoreCoordinator.open(
                at: url, types: all, options: StoreOptions(readOnly: true))
            defer { coordinator.close() }
            return LoadedModel(
                model: coordinator.model,
                source: .given(
                    "the model of store \(StoreURL.redacting(path)) (\(coordinator.modelSource.description)), from --model"
                ))
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
        let url = try location(path, allowingFolder: true)
        if (path == "sample" && !FileManager.default.fileExists(atPath: path)) || isStore(url) {
            guard let loaded = try loadModel(at: path, logger: logger) else {
                throw ObjectGraphError(.invalidModel, "no model at \(StoreURL.redacting(path))")
            }
            let name = StoreURL.isService(url) ? "the store's model" : url.deletingPathExtension().lastPathComponent
            return ModelVersions(single: loaded.model, name: name, source: StoreURL.redacting(path))
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

    /// Whether `url` is a store rather than a model: a server's URL, or a file (models are
    /// folders, or `contents`/`.mom` files) that a store type claims by suffix or by content.
    static func isStore(_ url: URL) -> Bool {
        if StoreURL.isService(url) { return true }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            !ModelLoader.isCompiledModel(url)
        else { return false }
        let suffix = url.pathExtension.lowercased()
        if all.contains(where: { $0.fileExtensions.contains(suffix) }) { return true }
        guard let start = try? RegularFile.read(url, maxLength: PersistentStoreCoordinator.recognitionLength) else {
            return false
        }
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
