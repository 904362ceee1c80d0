import Foundation

/// A binary property list of `depth` arrays nested one in the other, the innermost empty;
/// with `fanOut`, each array holds that many references to the next (shared, so the file
/// stays small while what it expands to is fanOut^depth values).
public func nestedBinaryPropertyList(depth: Int, fanOut: Int = 1) -> Data {
    var bytes = Array("bplist00".utf8)
    var offsets: [Int] = []
    for index in 0..<depth {
        offsets.append(bytes.count)
        if index == depth - 1 {
            bytes.append(0xA0)
            continue
        }
        // An array marker with its count (0xAF and an int when 15 or more), then 4-byte references.
        if fanOut < 15 {
            bytes.append(0xA0 | UInt8(fanOut))
        } else {
            bytes += [0xAF, 0x10, UInt8(fanOut)]
        }
        for _ in 0..<fanOut { bytes += withUnsafeBytes(of: UInt32(index + 1).bigEndian) { Array($0) } }
    }
    let table = bytes.count
    for offset in offsets { bytes += withUnsafeBytes(of: UInt32(offset).bigEndian) { Array($0) } }
    bytes += [0, 0, 0, 0, 0, 0, 4, 4]
    bytes += withUnsafeBytes(of: UInt64(depth).bigEndian) { Array($0) }
    bytes += withUnsafeBytes(of: UInt64(0).bigEndian) { Array($0) }
    bytes += withUnsafeBytes(of: UInt64(table).bigEndian) { Array($0) }
    return Data(bytes)
}
