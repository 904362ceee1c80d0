// fuzz-modules: Devices SQLiteRecovery Decoding ObjectGraph Locking Digest
// fuzz-max-len: 131072
//
// An iOS backup's manifest readers (Sources/Devices/Backup): the input is read as a Manifest.db
// (from the first WAL header magic at a 512-byte boundary on, as its -wal), as a Manifest.mbdb,
// and as one row's `file` column (an MBFile keyed archive). The records either reader gives are
// built into the tree a backup mount shows. Whatever the bytes, each reader ends without a trap,
// and no name in the tree can reach outside its folder: none is empty, `.`, `..`, holds a `/` or
// a NUL, or is longer than NAME_MAX, and no path is deeper than the bound.
import Devices
import Foundation
import SQLiteRecovery

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBackupManifest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var split = bytes.count
    var offset = 512
    while offset + 4 <= bytes.count {
        if bytes[offset] == 0x37, bytes[offset + 1] == 0x7F, bytes[offset + 2] == 0x06, bytes[offset + 3] & 0xFE == 0x82 {
            split = offset
            break
        }
        offset += 512
    }
    let log = split < bytes.count ? Array(bytes[split...]) : nil
    if let (records, unreadable) = try? ManifestReader.databaseRecords(Array(bytes[..<split]), log: log) {
        check(records, unreadable: unreadable)
    }
    if let (records, truncated) = try? ManifestReader.mbdbRecords(bytes) {
        check(records, unreadable: truncated ? 1 : 0)
    }
    if let facts = BackupFileFacts.decode(archive: Data(bytes), source: "fuzz") {
        precondition(facts.target.map { $0.utf8.count <= bytes.count } ?? true, "a link target longer than its archive")
    }
    return 0
}

/// Builds the tree of `records` (every other file ID taken as present) and walks it.
private func check(_ records: [BackupRecord], unreadable: Int) {
    var present = false
    let index = ManifestReader.index(records, unreadable: unreadable) { _ in
        present.toggle()
        return present
    }
    precondition(index.presentFiles + index.missingFiles <= records.count, "more files than rows")
    var pending: [(BackupIndex.Node, Int)] = []
    if let root = index.node(at: "") { pending.append((root, 0)) }
    var visited = 0
    while let (node, depth) = pending.popLast() {
        visited += 1
        precondition(visited <= index.count, "a node reached twice: the tree has a cycle")
        precondition(depth <= DevicePath.maximumDepth + 1, "a path past the depth bound")
        for child in index.children(of: node) {
            let name = child.name
            precondition(
                !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(0x2F) && !name.utf8.contains(0)
                    && name.utf8.count <= 255, "a name that reaches outside its folder: \(name.debugDescription)")
            if child.kind == .file, let row = child.record {
                precondition(BackupIndex.isFileID(records[row].fileID), "a file shown under a file ID that is a path")
            }
            pending.append((child, depth + 1))
        }
    }
}
