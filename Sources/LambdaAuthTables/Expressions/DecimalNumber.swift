/// An exact decimal for DynamoDB `N` values: comparisons and `SET n = n + :d` must not round
/// through Double (a 19-digit counter or `0.1 + 0.2` would come out wrong).
///
/// The value is `digits × 10^exponent`, digits most significant first, normalised so that equal
/// numbers have equal representations (no leading or trailing zero digits; zero has no digits).
struct DecimalNumber: Equatable, Comparable, CustomStringConvertible {
    /// DynamoDB keeps 38 significant digits; beyond that it refuses the value, and so do we.
    static let maximumDigits = 38

    private(set) var negative: Bool
    private(set) var digits: [UInt8]
    private(set) var exponent: Int

    init?(_ text: String) {
        var bytes = Array(text.utf8)[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        } else if bytes.first == UInt8(ascii: "+") {
            bytes = bytes.dropFirst()
        }
        var digits: [UInt8] = []
        var exponent = 0
        var sawDigit = false
        var sawPoint = false
        while let byte = bytes.first, byte != UInt8(ascii: "e"), byte != UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if byte == UInt8(ascii: ".") {
                guard !sawPoint else { return nil }
                sawPoint = true
                continue
            }
            guard byte >= 48, byte <= 57 else { return nil }
            sawDigit = true
            digits.append(byte - 48)
            if sawPoint { exponent -= 1 }
        }
        guard sawDigit else { return nil }
        if !bytes.isEmpty {
            bytes = bytes.dropFirst()
            var exponentNegative = false
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") {
                exponentNegative = bytes.first == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            guard !bytes.isEmpty, bytes.count <= 6 else { return nil }
            var value = 0
            for byte in bytes {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            exponent += exponentNegative ? -value : value
        }
        self.init(negative: negative, digits: digits, exponent: exponent)
    }

    private init(negative: Bool, digits: [UInt8], exponent: Int) {
        var digits = digits[...]
        while digits.first == 0 { digits = digits.dropFirst() }
        var exponent = exponent
        while digits.last == 0 {
            digits = digits.dropLast()
            exponent += 1
        }
        self.digits = Array(digits)
        self.exponent = digits.isEmpty ? 0 : exponent
        self.negative = digits.isEmpty ? false : negative
    }

    var isZero: Bool { digits.isEmpty }

    /// Position of the most significant digit: 10^magnitude ≤ |value| < 10^(magnitude+1).
    private var magnitude: Int { digits.count + exponent - 1 }

    private static func compareMagnitudes(_ a: DecimalNumber, _ b: DecimalNumber) -> Int {
        if a.isZero || b.isZero { return (a.isZero ? 0 : 1) - (b.isZero ? 0 : 1) }
        if a.magnitude != b.magnitude { return a.magnitude < b.magnitude ? -1 : 1 }
        for index in 0..<max(a.digits.count, b.digits.count) {
            let left = index < a.digits.count ? a.digits[index] : 0
            let right = index < b.digits.count ? b.digits[index] : 0
            if left != right { return left < right ? -1 : 1 }
        }
        return 0
    }

    static func < (a: DecimalNumber, b: DecimalNumber) -> Bool {
        if a.negative != b.negative { return a.negative }
        let order = compareMagnitudes(a, b)
        return a.negative ? order > 0 : order < 0
    }

    /// Digits aligned to `exponent` (least significant first), for schoolbook arithmetic.
    private func aligned(to exponent: Int) -> [UInt8] {
        Array(repeating: 0, count: self.exponent - exponent) + digits.reversed()
    }

    /// nil when the exact result would need more than 38 significant digits.
    static func + (a: DecimalNumber, b: DecimalNumber) -> DecimalNumber? {
        if a.isZero { return b }
        if b.isZero { return a }
        let exponent = min(a.exponent, b.exponent)
        // Operands more than ~80 orders apart cannot sum within 38 digits.
        guard max(a.magnitude, b.magnitude) - exponent < 2 * maximumDigits + 4 else { return nil }
        let left = a.aligned(to: exponent), right = b.aligned(to: exponent)
        var result: [UInt8] = []
        let negative: Bool
        if a.negative == b.negative {
            negative = a.negative
            var carry: UInt8 = 0
            for index in 0..<max(left.count, right.count) {
                let sum = (index < left.count ? left[index] : 0) + (index < right.count ? right[index] : 0) + carry
                result.append(sum % 10)
                carry = sum / 10
            }
            if carry > 0 { result.append(carry) }
        } else {
            let order = compareMagnitudes(a, b)
            if order == 0 { return DecimalNumber(negative: false, digits: [], exponent: 0) }
            let (larger, smaller) = order > 0 ? (left, right) : (right, left)
            negative = order > 0 ? a.negative : b.negative
            var borrow: Int = 0
            for index in 0..<larger.count {
                var difference = Int(larger[index]) - Int(index < smaller.count ? smaller[index] : 0) - borrow
                borrow = difference < 0 ? 1 : 0
                if difference < 0 { difference += 10 }
                result.append(UInt8(difference))
            }
        }
        let sum = DecimalNumber(negative: negative, digits: result.reversed(), exponent: exponent)
        return sum.digits.count <= maximumDigits ? sum : nil
    }

    static prefix func - (value: DecimalNumber) -> DecimalNumber {
        DecimalNumber(negative: !value.negative, digits: value.digits, exponent: value.exponent)
    }

    /// Plain decimal text (`12`, `-0.05`, `1200`), the form DynamoDB returns for ordinary values.
    var description: String {
        if isZero { return "0" }
        let sign = negative ? "-" : ""
        let text = String(decoding: digits.map { $0 + 48 }, as: UTF8.self)
        if exponent >= 0 {
            if exponent > 40 { return "\(sign)\(text)E\(exponent)" }
            return sign + text + String(repeating: "0", count: exponent)
        }
        let fractionLength = -exponent
        if fractionLength > 60 { return "\(sign)\(text)E\(exponent)" }
        if fractionLength >= digits.count {
            return sign + "0." + String(repeating: "0", count: fractionLength - digits.count) + text
        }
        let split = text.index(text.endIndex, offsetBy: -fractionLength)
        return sign + text[..<split] + "." + text[split...]
    }
}
