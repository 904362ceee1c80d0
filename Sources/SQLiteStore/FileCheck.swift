import Foundation
import ObjectGraph

/// Checks a file's SQLite header before SQLite sees it, so that a truncated or foreign file gives
/// a message that says what is wrong instead of SQLite's generic "file is not a database".
enum FileCheck {
    /// Whether the file's header says WAL (read and write versions 2), without opening it.
    static func isWAL(_ url: URL) -> Bool {
        let header = [UInt8]((try? RegularFile.read(url, maxLength: 20)) ?? Data())
        return header.count == 20 && header[18] == 2 && header[19] == 2
    }

    /// Refuses, before anything is opened, a store that cannot be written: the file, or the
    /// folder SQLite needs for its journal or WAL. A read-only mount is what such a store allows.
    static func checkWritable(_ url: URL) throws(ObjectGraphError) {
        let folder = url.deletingLastPathComponent().path
        guard access(url.path, W_OK) == 0 else {
            throw ObjectGraphError(
                .readOnly,
                "\(url.path) cannot be written (\(String(cString: strerror(errno)))); open it read-only (-o ro)")
        }
        guard access(folder, W_OK) == 0 else {
            throw ObjectGraphError(
                .readOnly,
                "the folder \(folder) cannot be written, and SQLite keeps its journal there; open the store read-only (-o ro)"
            )
        }
    }

    static func check(_ url: URL) throws(ObjectGraphError) {
        let path = url.path
        // Never waits: a FIFO or a device is refused (RegularFile).
        let header = [UInt8](try RegularFile.read(url, maxLength: 100))
        // The size of the file a link names, not of the link.
        let size =
            (try? FileManager.default.attributesOfItem(atPath: url.resolvingSymlinksInPath().path)[.size] as? Int)
            ?? header.count
        guard header.count == 100 else {
            throw ObjectGraphError(
                .corruptStore,
                "\(path) is not an SQLite store: it has only \(size) bytes, less than an SQLite header")
        }
        guard header.prefix(16).elementsEqual(Array("SQLite format 3\0".utf8)) else {
            throw ObjectGraphError(
                .corruptStore, "\(path) is not an SQLite store: the file does not start with the SQLite header")
        }
        var pageSize = Int(header[16]) << 8 | Int(header[17])
        if pageSize == 1 { pageSize = 65536 }
        let pageCount = Int(header[28]) << 24 | Int(header[29]) << 16 | Int(header[30]) << 8 | Int(header[31])
        let countIsValid = header[24..<28].elementsEqual(header[92..<96])
        if countIsValid, pageCount > 0, size < pageCount * pageSize {
            throw ObjectGraphError(
                .corruptStore,
                "\(path) is truncated: its header says \(pageCount) pages of \(pageSize) bytes (\(pageCount * pageSize) bytes) "
                    + "but the file has \(size) bytes; restore it from a backup")
        }
    }
}
