import FUSEBridge
import RangeCache

// The driver's side of the requests the read rules carry as tokens
// (`Episode.Token`): made from the FUSE replies, resolved to answer them.

/// What a token holds for a reply given as a protocol: the reply in a
/// class of the driver's own, so resolving the token checks a class and
/// never asks the Swift runtime whether a type conforms to a protocol. That
/// question is answered once per type and process by scanning every
/// conformance the process has loaded, which the first open and read of a
/// mount paid for (docs/DESIGN.md, "The first open of a process").
private final class Held<Reply: Sendable>: Sendable {
    let reply: Reply

    init(_ reply: Reply) {
        self.reply = reply
    }
}

extension Episode.Token {
    /// The request this token holds, as the driver made it: a token of
    /// one kind always holds the same type (the inits below), so anything
    /// else is a bug that stops here.
    fileprivate func held<Request: AnyObject>(as type: Request.Type) -> Request {
        guard let request = request as? Request else {
            preconditionFailure("a token holds \(Swift.type(of: request)), not \(type)")
        }
        return request
    }
}

extension Episode.Token where Kind == Episode.ReadRequest {
    init(_ reply: any DataReplying) {
        self.init(wrapping: Held(reply))
    }

    /// The read's reply.
    var reply: any DataReplying { held(as: Held<any DataReplying>.self).reply }
}

extension Episode.Token where Kind == Episode.OpenRequest {
    init(_ reply: any OpenReplying) {
        self.init(wrapping: Held(reply))
    }

    /// The open's reply.
    var reply: any OpenReplying { held(as: Held<any OpenReplying>.self).reply }
}

extension Episode.Token where Kind == Episode.SizeRequest {
    /// A box for the answer of an attribute request, so a token can hold it.
    private final class Answer: Sendable {
        let answer: @Sendable () -> Void

        init(_ answer: @escaping @Sendable () -> Void) {
            self.answer = answer
        }
    }

    init(_ answer: @escaping @Sendable () -> Void) {
        self.init(wrapping: Answer(answer))
    }

    /// Answers the attribute request, now that the size is known.
    func answer() {
        held(as: Answer.self).answer()
    }
}

extension Episode.Token where Kind == Episode.ScratchRequest {
    init(_ file: ScratchFile) {
        self.init(wrapping: file)
    }

    /// The scratch file.
    var file: ScratchFile { held(as: ScratchFile.self) }
}

extension Episode.OpenAnswer {
    /// The options the FUSE open is answered with.
    var options: OpenOptions {
        OpenOptions(handle: handle, keepCache: keepCache, dropAttributes: dropAttributes)
    }
}
