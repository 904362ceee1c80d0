// fuzz-modules: Decoding ObjectGraph Logging Digest
// fuzz-max-len: 16384
//
// The inflater (Sources/Decoding/Inflater.swift and RawInflate.swift): the input is a binary
// attribute's value, tried as gzip, zlib and raw DEFLATE as `ATTR.inflated` tries it, and as a
// raw stream with a small output bound (the Z_MODELCACHE reader's call). What inflates must stay
// within the bounds, and a stream read from its end must report an end inside the input.
import Decoding
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInflate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Data(bytes: data, count: size)
    if let inflated = Inflater.inflate(input) {
        precondition(inflated.bytes.count <= Inflater.maximumOutput, "inflated past the bound")
        precondition(!inflated.bytes.isEmpty || inflated.format != .deflate, "an empty raw stream counted as compressed")
    }
    let bytes = [UInt8](input)
    if let (output, end) = try? RawInflate.inflate(bytes, from: 0, limit: 1 << 16) {
        precondition(output.count <= 1 << 16 && end <= bytes.count, "a raw stream past its bounds")
    }
    return 0
}
