/// The read rules of one episode (docs/DESIGN.md, "The read path"): the
/// state (`EpisodeRules.State`) and the events that change it, each
/// returning the effects the driver carries out. A module of their own, so
/// the compiler holds what the comments promise: the driver (`PodFS`'s
/// `EpisodeReader`) reads the state's fields and calls its events, and
/// cannot write a field or call a helper. `PodFS` names these types
/// `Episode.State`, `Episode.FetchProgress`, ... (`Episode+Rules.swift`).
public enum EpisodeRules {}
