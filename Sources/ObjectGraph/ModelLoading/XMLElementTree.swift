import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A parsed XML element with the line it starts on, for model loaders that must name the line at
/// fault in their errors.
///
/// `XMLDocument` would give a tree but no line numbers, so the tree is built from `XMLParser`
/// callbacks, which do report them. Values; safe to share between threads.
struct XMLElementTree: Sendable {
    var name: String
    var attributes: [String: String]
    var children: [XMLElementTree]
    /// The 1-based line of the start tag (0 when the parser did not say).
    var line: Int

    /// The child elements named `name`, in document order.
    func children(named name: String) -> [XMLElementTree] {
        children.filter { $0.name == name }
    }

    /// The first child element named `name`.
    func child(named name: String) -> XMLElementTree? {
        children.first { $0.name == name }
    }

    /// The start tag as a user would search for it in the file: `<attribute name="age">`.
    var tagDescription: String {
        if let elementName = attributes["name"] {
            return "<\(name) name=\"\(elementName)\">"
        }
        return "<\(name)>"
    }

    /// Parses `data` into its root element.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` naming `source` and the line at which the
    ///   XML stops being well formed.
    static func parse(_ data: Data, source: String) throws(ObjectGraphError) -> XMLElementTree {
        guard data.count <= XMLInputCheck.maximumModelSize else {
            throw ObjectGraphError(
                .invalidModel,
                "\(source): \(data.count) bytes is too large for a model's contents "
                    + "(storefs reads up to \(XMLInputCheck.maximumModelSize >> 20) MiB); is this a model file?")
        }
        try XMLInputCheck.requireUTF8(data, source: source, code: .invalidModel)
        let parser = XMLParser(data: data)
        let builder = TreeBuilder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        let succeeded = parser.parse()
        if let line = builder.tooDeepLine {
            throw ObjectGraphError(
                .invalidModel,
                "\(source): line \(line): elements nest more than \(XMLInputCheck.maximumDepth) levels deep "
                    + "(Xcode writes 4); this is not a model Xcode wrote")
        }
        if !succeeded || builder.failure != nil {
            let line = builder.failureLine ?? parser.lineNumber
            var reason = describe(builder.failure ?? parser.parserError)
            // An error on the last byte of input, inside an open element, is most likely a cut-off
            // file rather than a typo; say so.
            let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            let code = ((builder.failure ?? parser.parserError) as NSError?)?.code
            if let open = builder.openElementName, line >= lines.count,
                (builder.failureColumn ?? parser.columnNumber) >= (lines.last?.count ?? 0),
                code != 73, code != 76, !reason.contains("truncated")
            {
                reason += "; the file ends inside <\(open)>: is it truncated?"
            }
            throw ObjectGraphError(
                .invalidModel, "\(source): line \(line): not well-formed XML (\(reason))")
        }
        guard let root = builder.root else {
            throw ObjectGraphError(.invalidModel, "\(source): contains no XML element (is it empty?)")
        }
        return root
    }

    /// Words for the XMLParser errors a damaged model file gives; the parser's own description is
    /// only a domain and a number (libxml2's codes).
    private static func describe(_ error: Error?) -> String {
        guard let error else { return "the parser gave no reason" }
        let code = (error as NSError).code
        switch code {
        case 4: return "no XML element where the document should start; is this an XML file?"
        case 5: return "the document ends before its elements are closed; is the file truncated?"
        case 9: return "an invalid character"
        case 26: return "an undeclared entity reference; write & as &amp;"
        case 41: return "an attribute without a value"
        case 65: return "an unclosed start tag or unquoted attribute"
        case 73, 76: return "a start tag that is not closed, or a mismatched end tag"
        default: return "XMLParser error \(code)"
        }
    }
}

/// Collects `XMLParser` callbacks into an ``XMLElementTree``; used by one parse on one thread.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    private var stack: [XMLElementTree] = []
    private(set) var root: XMLElementTree?
    /// The innermost element not yet closed, if any.
    var openElementName: String? { stack.last?.name }
    private(set) var failure: Error?
    private(set) var failureLine: Int?
    private(set) var failureColumn: Int?
    /// The line at which nesting passed ``XMLInputCheck/maximumDepth`` (the parse stops there:
    /// the tree is walked and freed recursively, so depth must stay bounded).
    private(set) var tooDeepLine: Int?

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
    ) {
        guard tooDeepLine == nil else { return }
        guard stack.count < XMLInputCheck.maximumDepth else {
            tooDeepLine = parser.lineNumber
            parser.abortParsing()
            return
        }
        stack.append(
            XMLElementTree(
                name: elementName, attributes: attributeDict, children: [], line: parser.lineNumber))
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?
    ) {
        guard tooDeepLine == nil, let element = stack.popLast() else { return }
        if stack.isEmpty {
            root = element
        } else {
            stack[stack.count - 1].children.append(element)
        }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        if failure == nil {
            failure = parseError
            failureLine = parser.lineNumber
            failureColumn = parser.columnNumber
        }
    }

    func parser(_ parser: XMLParser, validationErrorOccurred validationError: Error) {
        if failure == nil {
            failure = validationError
            failureLine = parser.lineNumber
            failureColumn = parser.columnNumber
        }
    }
}
