import Foundation

/// Loads the mapping models a user names with `--mapping`: an Xcode `.xcmappingmodel` folder (or
/// its `xcmapping.xml`), a compiled `.cdm` file, or a folder holding any of them (as an app bundle
/// holds its mapping models).
///
/// An Xcode mapping model's file is a Core Data XML store; it is opened with the XML store type
/// the caller gives (ObjectGraph knows no file format), read-only.
///
/// Stateless; safe from any thread.
public enum MappingModelLoader {
    /// The mapping model at `url`.
    public static func load(from url: URL, xmlStoreType: any PersistentStoreType) throws(ObjectGraphError)
        -> MappingModel
    {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ObjectGraphError(.notFound, "\(url.path): no such mapping model")
        }
        var file = url
        if isDirectory.boolValue {
            file = url.appendingPathComponent("xcmapping.xml")
            guard FileManager.default.fileExists(atPath: file.path) else {
                throw ObjectGraphError(
                    .invalidModel, "\(url.path): a folder without xcmapping.xml is not an Xcode mapping model")
            }
        }
        // Only a regular file: /dev/zero or a FIFO would be read forever (RegularFile).
        let head = try RegularFile.read(file, maxLength: 8, as: "mapping models")
        if BinaryPropertyList.looksLikeBinaryPropertyList(head) {
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
            guard size <= CompiledModelLoader.maximumArchiveSize else {
                throw ObjectGraphError(.invalidModel, "\(file.path): \(size) bytes, more than a mapping model may have")
            }
            let data = try RegularFile.read(
                file, maxLength: CompiledModelLoader.maximumArchiveSize + 1, as: "mapping models")
            guard data.count <= CompiledModelLoader.maximumArchiveSize else {
                throw ObjectGraphError(.invalidModel, "\(file.path): more bytes than a mapping model may have")
            }
            return try CompiledMappingModelDecoder.decode(data, source: url.path)
        }
        let store = try xmlStoreType.open(
            at: file, model: nil, options: StoreOptions(readOnly: true), initialMetadata: StoreMetadata())
        defer { store.close() }
        return try XcodeMappingModelReader.read(store, source: url.path)
    }

    /// Every mapping model `paths` name: each a mapping model, or a folder searched (one level,
    /// and inside `.app`-like folders not at all) for `.xcmappingmodel` folders and `.cdm` files.
    public static func loadAll(_ paths: [String], xmlStoreType: any PersistentStoreType) throws(ObjectGraphError)
        -> [MappingModel]
    {
        var result: [MappingModel] = []
        for path in paths {
            let url = URL(fileURLWithPath: path)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw ObjectGraphError(.notFound, "\(path): no such mapping model or folder")
            }
            let isMappingFolder =
                url.pathExtension == "xcmappingmodel"
                || FileManager.default.fileExists(atPath: url.appendingPathComponent("xcmapping.xml").path)
            if isDirectory.boolValue && !isMappingFolder {
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
                let found = names.filter { $0.hasSuffix(".xcmappingmodel") || $0.hasSuffix(".cdm") }
                guard !found.isEmpty else {
                    throw ObjectGraphError(.notFound, "\(path) holds no mapping model (.xcmappingmodel or .cdm)")
                }
                for name in found {
                    result.append(try load(from: url.appendingPathComponent(name), xmlStoreType: xmlStoreType))
                }
            } else {
                result.append(try load(from: url, xmlStoreType: xmlStoreType))
            }
        }
        return result
    }
}
