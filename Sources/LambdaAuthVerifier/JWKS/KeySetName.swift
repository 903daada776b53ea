/// Whose keys a `ProviderKeyCache` holds (an identity provider's, or our own access-token keys):
/// it names the disk cache file and appears in log lines and messages, so it is a plain name.
package struct KeySetName: Sendable, Hashable {
    package let rawValue: String

    package init(_ rawValue: String) { self.rawValue = rawValue }
}
