// fuzz-modules: StoreFS FuseKit Decoding ObjectGraph Logging Digest CoreMetrics Devices SQLiteRecovery Locking
// fuzz-libraries: uring numa pthread dl rt
// fuzz-max-len: 16384
//
// The renderings of binary values (Sources/StoreFS/Rendering/ValueRendering.swift): the input is
// a binary attribute's value, and every rendering of the registry is made of it as a mount
// would make `ATTR.json`, `ATTR.inflated`, `ATTR.pb.txt` and `ATTR.plist` (inflating first,
// then schema-less protobuf, binary and XML property lists, keyed archives). A property list's
// rendering must read back as itself, and protobuf text must be UTF-8.
import Decoding
import Foundation

@testable import StoreFS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzValueRendering(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Data(bytes: data, count: size)
    for rendering in ValueRendering.all {
        guard let rendered = rendering.render(input) else { continue }
        switch rendering.suffix {
        case ".plist":
            precondition(PropertyListXML.render(rendered) == rendered, "a property list's rendering does not read back as itself")
        case ".pb.txt":
            precondition(String(validating: rendered, as: UTF8.self) != nil, "protobuf text that is not UTF-8")
        default: break
        }
    }
    // The decoders on the bytes as given too (the registry inflates first).
    _ = ProtobufText.render(input)
    _ = PropertyListXML.render(input)
    return 0
}
