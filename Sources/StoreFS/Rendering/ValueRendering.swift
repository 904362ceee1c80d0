import Decoding
import Foundation

/// One readable rendering of a binary or transformable value: the suffix that names it beside the
/// attribute's file (`ATTR.inflated`) and the function from the value's bytes to the rendering's,
/// nil when the value has none. ``all`` is the registry the mount's rendering node goes through
/// (docs/SEMANTICS.md, "Renderings of binary values").
///
/// Suffixes start at the name's first dot: a Core Data property name holds no dot, so
/// ``split(_:)`` finds the attribute and the rendering of a name without ambiguity, whatever the
/// suffixes. Every function is pure and bounded (each decoder's own limits), so a rendering can
/// be computed again whenever it is needed.
///
/// Threading: values; the functions are safe from any thread.
struct ValueRendering: Sendable {
    let suffix: String
    let render: @Sendable (Data) -> Data?

    /// A keyed archive or binary property list as JSON (``ArchivedValueRendering``).
    static let json = ValueRendering(suffix: ArchivedValueRendering.suffix) { ArchivedValueRendering.json(of: $0) }
    /// gzip, zlib or raw DEFLATE bytes inflated (``Inflater``).
    static let inflated = ValueRendering(suffix: ".inflated") { Inflater.inflate($0)?.bytes }
    /// A protobuf message without its schema as text, inflated first when compressed (``ProtobufText``).
    static let protobufText = ValueRendering(suffix: ".pb.txt") { ProtobufText.render(Inflater.inflatedOrSelf($0)) }
    /// A binary or XML property list as an XML one, inflated first when compressed (``PropertyListXML``).
    static let propertyList = ValueRendering(suffix: ".plist") { PropertyListXML.render(Inflater.inflatedOrSelf($0)) }

    /// Every rendering, in the order `user.attribute.renderings` names them.
    static let all: [ValueRendering] = [json, inflated, protobufText, propertyList]

    /// The rendering with this suffix (`.pb.txt`), if any.
    static func named(_ suffix: String) -> ValueRendering? {
        all.first { $0.suffix == suffix }
    }

    /// The attribute and rendering a name in an object folder stands for (`data.pb.txt`: `data`,
    /// ``protobufText``); nil when the name has no rendering's suffix.
    static func split(_ name: String) -> (attribute: String, rendering: ValueRendering)? {
        guard let dot = name.firstIndex(of: "."), dot != name.startIndex, let rendering = named(String(name[dot...]))
        else {
            return nil
        }
        return (String(name[..<dot]), rendering)
    }

    /// The suffixes of the renderings `bytes` has, without their leading dot (`inflated`,
    /// `pb.txt`), for the attribute file's xattrs.
    static func names(for bytes: Data) -> [String] {
        all.filter { $0.render(bytes) != nil }.map { String($0.suffix.dropFirst()) }
    }
}
