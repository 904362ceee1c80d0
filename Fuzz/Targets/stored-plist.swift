// fuzz-modules: Decoding ObjectGraph Digest
// fuzz-max-len: 65536
//
// A store's own property lists (Sources/Decoding/StoredPropertyList.swift): the metadata of a
// SQLite or PostgreSQL store (Z_PLIST), an XML store's <metadata>, a binary store's metadata
// section, binary or XML, read by the bounded readers. Nothing may crash or recurse without
// bound; what reads is a dictionary within the value bound, and written back as storefs writes
// metadata (a binary property list) it reads back the same.
import Decoding
import Foundation
import ObjectGraph

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStoredPropertyList(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Data(bytes: data, count: size)
    guard let values = try? StoredPropertyList.dictionary(input, source: "fuzz") else { return 0 }
    let value = MetadataValue.dictionary(values)
    // NaN is not equal to itself: such a list cannot be compared after the round trip.
    guard value == value,
        let written = try? PropertyListSerialization.data(
            fromPropertyList: value.propertyList, format: .binary, options: 0)
    else { return 0 }
    let again = try? StoredPropertyList.dictionary(written, source: "fuzz (written back)")
    precondition(again == values, "metadata written back reads otherwise")
    return 0
}
