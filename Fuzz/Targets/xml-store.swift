// fuzz-modules: XMLStore AtomicStore Decoding ObjectGraph Digest Logging
// fuzz-max-len: 262144
//
// The XML store reader: the input is a whole .xml store, opened read-only with no model (so the
// model comes from its metadata or is inferred from the objects), then walked.
import Foundation
import ObjectGraph
import XMLStore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzXMLStore(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let url = FuzzSupport.file(named: "store.xml", UnsafeRawBufferPointer(start: data, count: size))
    FuzzSupport.openAndWalk(url, types: [XMLStoreType()])
    return 0
}
