// fuzz-modules: ObjectGraph Digest Logging
// fuzz-max-len: 262144
//
// The compiled-model reader: the input is a keyed archive of an NSManagedObjectModel, what a
// `.mom` file holds and what Core Data caches (deflated) in a store's Z_MODELCACHE. A model that
// decodes is used as a mount uses a store's own model: its version hashes are computed (they go
// into the store's metadata), and it is written as Xcode contents and read back, and as the
// model cache storefs writes into SQLite stores (which must give back the same hashes).
import Foundation
import ObjectGraph

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCompiledModel(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let decoded = try? CompiledModelLoader.decode(archive: Data(bytes: data, count: size), source: "fuzz input") else {
        return 0
    }
    _ = VersionHash.metadata(for: decoded.model)
    _ = try? XcodeModelLoader.load(contents: Data(XcodeModelWriter.contents(of: decoded.model).utf8), source: "written back")
    // The cache storefs writes for a model (none for a model with a derived attribute) must give
    // back its version hashes.
    let hashes = VersionHash.entityHashes(of: decoded.model)
    guard let archive = CompiledModelEncoder.encode(decoded.model) else { return 0 }
    guard let cached = try? CompiledModelLoader.decode(archive: archive, source: "encoded"),
        VersionHash.entityHashes(of: cached.model) == hashes
    else { fatalError("the model cache storefs writes for a decoded model does not read back with the same version hashes") }
    return 0
}
