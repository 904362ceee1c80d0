import Foundation

/// How a store's location appears in messages, logs, extended attributes and /proc/mounts: a
/// file's path, or a server URL without its password.
///
/// ``redacting(_:)`` is the one place a password is taken out: every location storefs shows goes
/// through it (``describe(_:)``, the PostgreSQL store's own description, a command's argument
/// that is not even a valid URL).
///
/// Stateless; safe from any thread.
public enum StoreURL {
    /// What stands in for a password.
    public static let mask = "***"

    /// `url` as storefs shows it: a file's path, a server URL with its password masked;
    /// `memory` for none.
    public static func describe(_ url: URL?) -> String {
        guard let url else { return "memory" }
        if url.isFileURL { return url.path }
        return redacting(url.absoluteString)
    }

    /// `text` with every password masked: the one after `user:` in `scheme://user:PASSWORD@host`
    /// and the value of every `password=` parameter of the query. Works on text (not on a parsed
    /// URL) so that an argument no URL parser accepts is masked too; text without `://` (a
    /// file's path) is returned as it is.
    public static func redacting(_ text: String) -> String {
        redacting(text) { _ in mask }
    }

    /// `text` with each password replaced by what `replacement` makes of it (a mask of the same
    /// length rewrites a process's own command line in place).
    public static func redacting(_ text: String, replacement: (Substring) -> String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        var result = String(text[..<schemeEnd.upperBound])
        let rest = text[schemeEnd.upperBound...]
        // The authority (`user:password@host:port`) ends where the path, query or fragment starts.
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        // The last @: a password may hold an unescaped one, a host never does.
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                result += userInfo[...colon] + replacement(userInfo[userInfo.index(after: colon)...])
            } else {
                result += userInfo
            }
            result += authority[at...]
        } else {
            result += authority
        }
        let tail = rest[authorityEnd...]
        guard let question = tail.firstIndex(of: "?") else { return result + tail }
        result += tail[...question]
        let afterQuestion = tail[tail.index(after: question)...]
        let fragment = afterQuestion.firstIndex(of: "#") ?? afterQuestion.endIndex
        let items = afterQuestion[..<fragment].split(separator: "&", omittingEmptySubsequences: false).map {
            item -> String in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts.first ?? ""
            let decoded = (String(name).removingPercentEncoding ?? String(name)).lowercased()
            guard decoded == "password" else { return String(item) }
            return name + "=" + replacement(parts.count > 1 ? parts[1] : "")
        }
        return result + items.joined(separator: "&") + afterQuestion[fragment...]
    }

    /// Whether `url` names a store on a server rather than a file.
    public static func isService(_ url: URL) -> Bool { !url.isFileURL && url.scheme != nil }
}
