import Foundation
import ObjectGraph

/// Checks a file's SQLite header before SQLite sees it, so that a truncated or foreign file gives
/// a message that says what is wrong instead of SQLite's generic "file is not a database".
enum FileCheck {
    static func check(_ url: URL) throws(ObjectGraphError) {
        let path = url.path
        guard let handle = FileHandle(forReadingAtPath: path) else {
            if FileManager.default.fileExists(atPath: path) {
                throw ObjectGraphError(.io, "\(path) cannot be opened for reading; check its permissions")
            }
            throw ObjectGraphError(.notFound, "\(path) does not exist")
        }
        defer { try? handle.close() }
        let header = [UInt8]((try? handle.read(upToCount: 100)) ?? Data())
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? header.count
        guard header.count == 100 else {
            throw ObjectGraphError(
                .corruptStore,
                "\(path) is not an SQLite store: it has only \(size) bytes, less than an SQLite header")
        }
        guard header.prefix(16).elementsEqual(Array("SQLite format 3\0".utf8)) else {
            throw ObjectGraphError(.corruptStore, "\(path) is not an SQLite store: the file does not start with the SQLite header")
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
