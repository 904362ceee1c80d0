import Foundation
import FuseKit

// The benchmarks' FUSE floor: copies a directory tree into memory and serves it through FuseKit
// with storefs's mount options (FloorFileSystem), until unmounted (`fusermount3 -u MOUNTPOINT`).
// Workloads run on it beside storefs show what any FUSE filesystem pays on this machine.
//
//   swift build -c release --product fuse-floor
//   fuse-floor [--read-only] [--threads N] [--no-io-uring] [--direct-io] SOURCE MOUNTPOINT &   # mounted once `mountpoint -q MOUNTPOINT`
//
// Requests go through FUSE over io_uring when the kernel offers it, as storefs's do (FuseKit's
// MountOptions.ioUring); --no-io-uring (or STOREFS_IO_URING=0) keeps them on /dev/fuse.
// --direct-io opens files with direct I/O, as storefs opens attribute files on read-write mounts.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("fuse-floor: \(message)\n".utf8))
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var readOnly = false
var threads = MountOptions().maxThreads
var ioUring = MountOptions.ioUringByDefault
var directIO = false
while let option = arguments.first, option.hasPrefix("--") {
    arguments.removeFirst()
    switch option {
    case "--read-only": readOnly = true
    case "--no-io-uring": ioUring = false
    case "--direct-io": directIO = true
    case "--threads":
        guard let value = arguments.first.flatMap({ Int($0) }), (1...64).contains(value) else {
            fail("--threads needs 1 to 64")
        }
        arguments.removeFirst()
        threads = value
    default: fail("unknown option \(option)")
    }
}
guard arguments.count == 2 else {
    fail("usage: fuse-floor [--read-only] [--threads N] [--no-io-uring] [--direct-io] SOURCE MOUNTPOINT")
}
let (source, mountPoint) = (arguments[0], arguments[1])

/// Copies the tree under `path` into `parent`: directories, regular files with their bytes,
/// symbolic links, with their permissions, owners and times. Other kinds are skipped.
func copyTree(_ path: String, into parent: InodeNumber, of fileSystem: FloorFileSystem) throws {
    guard let directory = opendir(path) else { fail("\(path): \(String(cString: strerror(errno)))") }
    defer { closedir(directory) }
    while let record = readdir(directory) {
        let name = withUnsafeBytes(of: record.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name == "." || name == ".." { continue }
        let child = path + "/" + name
        var status = stat()
        guard lstat(child, &status) == 0 else { fail("\(child): \(String(cString: strerror(errno)))") }
        let kind: NodeKind
        switch status.st_mode & S_IFMT {
        case S_IFDIR: kind = .directory
        case S_IFREG: kind = .regularFile
        case S_IFLNK: kind = .symbolicLink
        default: continue
        }
        // A file that cannot be read stops the copy: the floor must serve the same tree.
        var content = Data()
        var target = ""
        if kind == .regularFile {
            guard let bytes = FileManager.default.contents(atPath: child) else { fail("\(child): cannot be read") }
            content = bytes
        } else if kind == .symbolicLink {
            guard let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: child) else {
                fail("\(child): the link cannot be read")
            }
            target = destination
        }
        let attributes = FileAttributes(
            status, kind: kind, size: kind == .symbolicLink ? target.utf8.count : content.count)
        let added = try fileSystem.add(name, in: parent, attributes: attributes, content: content, target: target)
        if kind == .directory { try copyTree(child, into: added.inode, of: fileSystem) }
    }
}

extension FileAttributes {
    /// What `lstat` said of a copied node (its inode is given when it is added).
    init(_ status: stat, kind: NodeKind, size: Int) {
        let time = { (spec: timespec) in Date(timeIntervalSince1970: Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9) }
        self.init(
            inode: .root, kind: kind, permissions: UInt32(status.st_mode & 0o7777), size: UInt64(size),
            linkCount: kind == .directory ? 2 : 1, uid: status.st_uid, gid: status.st_gid,
            modificationTime: time(status.st_mtim), changeTime: time(status.st_ctim), accessTime: time(status.st_atim))
    }
}

let fileSystem = FloorFileSystem(directIO: directIO)
var top = stat()
guard lstat(source, &top) == 0, top.st_mode & S_IFMT == S_IFDIR else { fail("\(source) is not a directory") }
fileSystem.setRootAttributes(FileAttributes(top, kind: .directory, size: 0))
do {
    try copyTree(source, into: .root, of: fileSystem)
} catch {
    fail("copying \(source): \(error)")
}
var options = MountOptions(
    readOnly: readOnly, fsName: "fuse-floor", subtype: "fuse-floor", maxThreads: threads, ioUring: ioUring)
// As storefs mounts read-only stores: the kernel opens files and directories without asking.
options.opensWithoutRequests = readOnly
options.cachesLinkTargets = readOnly
let counters = OperationCounters()
do {
    let session = try FuseSession(fileSystem: fileSystem, mountPoint: mountPoint, options: options, counters: counters)
    try session.mount()
    try session.run()
    let transport = session.transport.map { $0 == .ioUring ? "io_uring" : "/dev/fuse" } ?? "none (no request)"
    FileHandle.standardError.write(Data("fuse-floor: requests came through \(transport)\n".utf8))
    // What the kernel asked, for comparing with storefs's counts (user.storefs.stats); the
    // benchmarks keep it in their work folder's floor.log.
    let counts = counters.snapshot().sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }
    FileHandle.standardError.write(Data("fuse-floor: FUSE operations: \(counts.joined(separator: ", "))\n".utf8))
} catch {
    fail("\(error)")
}
