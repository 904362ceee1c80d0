import Foundation

/// SQL text storefs builds itself: identifiers always quoted (Core Data's names keep their case,
/// `"ZBOOK"`), literals only for values storefs made (keys, Z_ENT numbers) or escaped as
/// `standard_conforming_strings` reads them (the only special character is the quote).
enum SQLText {
    static func identifier(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// A text literal; nil when the text holds a NUL, which PostgreSQL's text cannot hold.
    static func literal(_ text: String) -> String? {
        guard !text.utf8.contains(0) else { return nil }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// A bigint[] parameter: `{1,2,3}`.
    static func array(_ keys: some Sequence<Int64>) -> String {
        "{" + keys.map(String.init).joined(separator: ",") + "}"
    }
}
