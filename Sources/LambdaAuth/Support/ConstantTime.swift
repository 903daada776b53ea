/// Compares every byte whatever the first difference, so the time taken tells an attacker nothing
/// about how much of a secret (a signature, a token's hash) they guessed right.
func constantTimeEqual<Left: Collection, Right: Collection>(_ lhs: Left, _ rhs: Right) -> Bool
where Left.Element == UInt8, Right.Element == UInt8 {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
    return difference == 0
}
