import Foundation
import SQLiteRecovery

#if canImport(Glibc)
    import Glibc
#endif

/// The system calls device trees are read with: everything relative to a folder descriptor,
/// nothing following a symbolic link, files opened read-only without blocking and, where the
/// kernel allows, without touching their access time.
enum FileAccess {
    /// Linux's O_NOATIME (fcntl.h; not exported to Swift). Allowed to the owner and root.
    static let noAccessTime: Int32 = 0o1000000

    /// Opens `name` in folder `folder` as a regular file for reading; nil with errno set.
    static func openFile(_ name: String, in folder: Int32) -> Int32? {
        let flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
        var fd = openat(folder, name, flags | noAccessTime)
        if fd < 0 && errno == EPERM { fd = openat(folder, name, flags) }
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            errno = EINVAL
            return nil
        }
        return fd
    }

    /// Opens folder `name` in `folder` without following a link; nil with errno set.
    static func openFolder(_ name: String, in folder: Int32) -> Int32? {
        let fd = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        return fd >= 0 ? fd : nil
    }

    /// `lstat` of `name` in `folder`.
    static func status(of name: String, in folder: Int32) -> stat? {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return info
    }

    /// The kind a status says, nil for what a tree does not show (devices, FIFOs, sockets).
    static func kind(of info: stat) -> DeviceItem.Kind? {
        switch info.st_mode & S_IFMT {
        case S_IFDIR: .folder
        case S_IFREG: .file
        case S_IFLNK: .link
        default: nil
        }
    }

    static func date(_ time: timespec) -> Date {
        Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    }

    /// What identifies a file's bytes without reading them.
    static func identity(of info: stat) -> String {
        "\(info.st_dev):\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
            + ":\(info.st_ctim.tv_sec).\(info.st_ctim.tv_nsec)"
    }

    /// The target of link `name` in `folder`.
    static func linkTarget(_ name: String, in folder: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = buffer.withUnsafeMutableBufferPointer { pointer in
            readlinkat(
                folder, name, UnsafeMutableRawPointer(pointer.baseAddress!).assumingMemoryBound(to: CChar.self),
                pointer.count)
        }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    static var reason: String { String(cString: strerror(errno)) }
}
