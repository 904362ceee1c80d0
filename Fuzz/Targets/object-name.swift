// fuzz-modules: ObjectGraph Digest Logging
// fuzz-max-len: 512
//
// The object-name parser: the input is a name looked up in an entity directory (`p12`) or an
// object URI (`x-coredata://UUID/Employee/p12`, as in xattrs and copied links).
import Foundation
import ObjectGraph

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzObjectName(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let key = PrimaryKey(reference: text) {
        // A name that parses must be the key's own name, or two names would reach one object.
        guard PrimaryKey(reference: key.description) == key else { fatalError("\(key) does not read back") }
    }
    _ = PrimaryKey(reference: text.dropFirst(0))
    if let uri = ObjectURI(text) {
        guard ObjectURI(uri.description) == uri else { fatalError("\(uri) does not read back") }
    }
    return 0
}
