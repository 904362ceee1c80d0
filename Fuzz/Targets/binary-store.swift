// fuzz-modules: BinaryStore AtomicStore Decoding ObjectGraph Digest Logging
// fuzz-max-len: 262144
//
// The binary store reader: the input is a whole .binary store, opened read-only with no model and
// walked; then once more with its sizes and three CRC-32C checksums made to match, so that
// mutations reach the metadata and objects decoders instead of stopping at a checksum; and the fixed
// bytes decoded in chunks of two objects on two threads must give what reading in one piece gives
// (the same graph, or the same error).
import Foundation
import ObjectGraph
@testable import BinaryStore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBinaryStore(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    FuzzSupport.openAndWalk(FuzzSupport.file(named: "store.binary", input), types: [BinaryStoreType()])
    var bytes = [UInt8](input)
    let header = BinaryStoreFormat.headerSize
    guard bytes.count >= header, bytes.prefix(8).elementsEqual(BinaryStoreFormat.magic) else { return 0 }
    func le(_ offset: Int, _ count: Int) -> Int {
        (0..<count).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
    }
    func put(_ value: UInt64, at offset: Int, _ count: Int) {
        for i in 0..<count { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
    }
    let metadataLength = min(le(12, 4), bytes.count - header)
    let objectsLength = bytes.count - header - metadataLength
    put(UInt64(metadataLength), at: 12, 4)
    put(UInt64(objectsLength), at: 16, 8)
    bytes.withUnsafeBytes { all in
        put(UInt64(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[header..<(header + metadataLength)]))), at: 24, 4)
        put(UInt64(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[(header + metadataLength)...]))), at: 28, 4)
    }
    bytes.withUnsafeBytes { all in put(UInt64(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[0..<36]))), at: 36, 4) }
    bytes.withUnsafeBytes { FuzzSupport.openAndWalk(FuzzSupport.file(named: "fixed.binary", $0), types: [BinaryStoreType()]) }
    let fixed = Data(bytes)
    func read(_ parallelism: BinaryStoreFormat.Parallelism) -> Result<StoreGraph, ObjectGraphError> {
        Result { () throws(ObjectGraphError) in
            try BinaryStoreFormat.decode(fixed, model: nil, path: "fixed.binary", parallelism: parallelism).1
        }
    }
    switch (read(.sequential), read(BinaryStoreFormat.Parallelism(chunkObjects: 2, helpers: 1))) {
    case (.success(let a), .success(let b)):
        if a.snapshots != b.snapshots || a.toMany != b.toMany || a.keysByRoot != b.keysByRoot || a.maxKey != b.maxKey {
            fatalError("decoding in chunks gave another graph")
        }
    case (.failure(let a), .failure(let b)):
        if a.message != b.message { fatalError("decoding in chunks gave another error: \(b.message) vs \(a.message)") }
    default: fatalError("decoding in chunks and in one piece disagree")
    }
    return 0
}
