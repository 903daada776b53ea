import Logging

// Typed log metadata, for every logger of the product (the JWKS cache here, the handlers through
// LambdaAuth's JSONLogHandler, which writes these as JSON numbers, booleans and null).

/// The value of a `.null` metadata entry.
package struct JSONNull: CustomStringConvertible, Sendable {
    package var description: String { "null" }
}

/// The value of a `.number` metadata entry. A type of our own, so that the log handler tells a
/// number by a cast to a concrete type: a cast to `any BinaryInteger` searched every protocol
/// conformance in the binary, once per type, in every new process.
package struct JSONInteger: CustomStringConvertible, Sendable {
    package let description: String

    package init(_ value: some BinaryInteger) {
        description = String(value)
    }
}

/// The value of a `.milliseconds` metadata entry: a decimal number, three places.
package struct JSONDecimal: CustomStringConvertible, Sendable {
    package let description: String

    package init(_ value: Double) {
        let thousandths = Int64((max(value, 0) * 1000).rounded())
        // Strings joined as strings: appending the Substring went through the generic
        // append(contentsOf:), which looks its types up at run time in a new process.
        description = String(thousandths / 1000) + "." + String(String(1000 + thousandths % 1000).dropFirst())
    }
}

extension Logger.MetadataValue {
    /// A JSON number in the log line.
    public static func number(_ value: some BinaryInteger & Sendable) -> Self { .stringConvertible(JSONInteger(value)) }
    /// A JSON boolean in the log line.
    public static func bool(_ value: Bool) -> Self { .stringConvertible(value) }
    /// A JSON number with three decimals (a duration in milliseconds, say).
    public static func decimal(_ value: Double) -> Self { .stringConvertible(JSONDecimal(value)) }
    /// A JSON null in the log line (a field that has no value this time, kept so lines line up).
    public static let null = Self.stringConvertible(JSONNull())
}
