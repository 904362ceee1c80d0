import Foundation
import ObjectGraph
import Testing

/// How a store's location is shown: one function masks every password, in URLs that parse and in
/// text no URL parser accepts.
@Suite struct StoreURLTests {
    @Test(arguments: [
        ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://u:p@ss@h:5432/db?schema=a", "postgresql://u:***@h:5432/db?schema=a"),
        ("postgres://h/db?user=u&password=pw&sslmode=require", "postgres://h/db?user=u&password=***&sslmode=require"),
        ("postgresql:///db?host=/run/pg&PASSWORD=x#frag", "postgresql:///db?host=/run/pg&PASSWORD=***#frag"),
        ("postgresql://u:pw@h/db?x=a b&password=", "postgresql://u:***@h/db?x=a b&password=***"),
        ("postgresql://:pw@h", "postgresql://:***@h"),
        ("/srv/stores/Library.sqlite", "/srv/stores/Library.sqlite"),
        ("Library:weird@name.sqlite", "Library:weird@name.sqlite")
    ])
    func passwordsAreMasked(text: String, shown: String) {
        #expect(StoreURL.redacting(text) == shown)
    }

    @Test func describedURLsHideThePasswordAndPathsStayAsTheyAre() throws {
        let url = try #require(URL(string: "postgresql://app:s3cret@db.example:6432/graphs?password=s3cret&schema=a"))
        #expect(StoreURL.describe(url) == "postgresql://app:***@db.example:6432/graphs?password=***&schema=a")
        #expect(StoreURL.describe(URL(fileURLWithPath: "/tmp/a b.sqlite")) == "/tmp/a b.sqlite")
        #expect(StoreURL.describe(nil) == "memory")
    }

    /// A mask of the same length (what rewrites a process's own command line in place).
    @Test func aMaskOfTheSameLengthKeepsTheTextsLength() {
        let text = "postgresql://u:s3cret@h/db?password=xyz"
        let masked = StoreURL.redacting(text) { String(repeating: "*", count: $0.utf8.count) }
        #expect(masked == "postgresql://u:******@h/db?password=***")
        #expect(masked.utf8.count == text.utf8.count)
    }
}
