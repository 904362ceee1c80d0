import Foundation

extension ModelDifference {
    /// The difference as `storefs model --diff` prints it: one line per entity that differs, one
    /// indented line per property that differs (`+` added, `-` removed, `>` renamed, `~`
    /// changed), then whether Core Data could migrate lightweight and what it would need.
    public func report(from old: String, to new: String) -> String {
        var out = "\(old) → \(new)\n"
        var unchanged: [String] = []
        for entity in entities {
            if entity.change == .unchanged {
                unchanged.append(entity.name)
                continue
            }
            var line: String
            switch entity.change {
            case .added: line = "+ \(entity.name): entity added"
            case .removed: line = "- \(entity.name): entity removed"
            case .renamed(let from): line = "> \(entity.name): entity renamed from \(from) (renaming identifier)"
            default: line = "~ \(entity.name): entity changed"
            }
            if !entity.hashDiffers { line += " (same version hash)" }
            let details = entity.details
            if !details.isEmpty { line += ": " + details.joined(separator: ", ") }
            out += line + "\n"
            for property in entity.properties {
                var text: String
                switch property.change {
                case .added: text = "    + \(property.name) (\(property.kind.rawValue)): added"
                case .removed: text = "    - \(property.name) (\(property.kind.rawValue)): removed"
                case .renamed(let from):
                    text =
                        "    > \(property.name) (\(property.kind.rawValue)): renamed from \(from) (renaming identifier)"
                default: text = "    ~ \(property.name) (\(property.kind.rawValue)): changed"
                }
                if !property.details.isEmpty { text += ", " + property.details.joined(separator: ", ") }
                switch property.verdict {
                case .lightweight: break
                case .dependsOnData: text += " [needs data check]"
                case .refused: text += " [not lightweight]"
                }
                out += text + "\n"
            }
        }
        if !unchanged.isEmpty { out += "= unchanged: \(unchanged.joined(separator: ", "))\n" }
        if isCompatible {
            out += "same version hashes: a store of one opens with the other, no migration needed\n"
            return out
        }
        let refused = refusals
        if refused.isEmpty {
            out += "lightweight migration: possible"
            let conditions = self.conditions
            if conditions.isEmpty {
                out += "\n"
            } else {
                out += ", provided the store's objects fit:\n"
                for condition in conditions { out += "  - \(condition)\n" }
            }
        } else {
            out += "lightweight migration: not possible (a mapping model is needed):\n"
            for reason in refused { out += "  - \(reason)\n" }
        }
        return out
    }
}
