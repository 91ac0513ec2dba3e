//! `ctxfold conversation …` (`c`): one module per subcommand.

pub mod append;
pub mod compact;
pub mod export;
pub mod fork;
pub mod import;
pub mod ls;
pub mod print;
pub mod rm;
pub mod show;
pub mod use_;
