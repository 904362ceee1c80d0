// fuzz-modules: StoreFS FuseKit Decoding ObjectGraph Logging Digest CoreMetrics Devices SQLiteRecovery Locking
// fuzz-libraries: uring numa pthread dl rt
// fuzz-max-len: 1024
//
// The value text parsers (Sources/StoreFS/ValueText.swift): the first byte picks the attribute
// type, the rest is what a user writes into an attribute file. A value that parses is shown as
// text and parsed again. The same bytes, read as a Double, are also shown as a date, a double
// and a float, as values read from a store are.
import Foundation
import ObjectGraph
@testable import StoreFS

private let types: [AttributeType] = [
    .integer16, .integer32, .integer64, .decimal, .double, .float, .string, .boolean, .date, .binaryData,
    .transformable, .uuid, .uri, .objectID, .undefined,
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzValueText(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let type = types[Int(data[0]) % types.count]
    let content = Data(bytes: data + 1, count: size - 1)
    if let value = try? ValueText.value(from: content, type: type) {
        _ = try? ValueText.value(from: ValueText.content(of: value, type: type), type: type)
    }
    _ = ValueText.parseDate(String(decoding: content, as: UTF8.self))
    if size >= 9 {
        var bits: UInt64 = 0
        for i in 1...8 { bits = bits << 8 | UInt64(data[i]) }
        let number = Double(bitPattern: bits)
        _ = ValueText.text(of: .date(Date(timeIntervalSinceReferenceDate: number)))
        _ = ValueText.text(of: .double(number))
        _ = ValueText.text(of: .float(Float(bitPattern: UInt32(truncatingIfNeeded: bits))))
    }
    return 0
}
