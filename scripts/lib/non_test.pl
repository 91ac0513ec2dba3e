# What counts as test code in a source file, shared by scripts/check-structure
# and scripts/check-wire (issue 47): a `#[cfg(test)] mod NAME { … }` block,
# from its attribute to its closing brace, and a whole file declared as
# `#[cfg(test)] mod NAME;`. A test-only item elsewhere (`#[cfg(test)] fn`,
# `#[cfg(test)] mod fixtures;` beside the code) hides nothing else of the
# file: the earlier rule stopped at the first `#[cfg(test)]` and so skipped
# everything after such an item.
use strict;
use warnings;

# `$text` with comments, string and character literals blanked (every
# character but a newline made a space), so braces and attributes in them
# are not read as code; offsets and line numbers stay those of `$text`.
sub blank_literals {
    my ($text) = @_;
    $text =~ s{
        ( //[^\n]*
        | /\*.*?\*/
        | r(\#*)".*?"\2
        | "(?:[^"\\]|\\.)*"
        | '(?:[^'\\\n]|\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.))'
        )
    }{ $1 =~ s/[^\n]/ /gr }gsex;
    return $text;
}

# The `[start, end)` byte spans of the inline test modules of `$text`.
sub test_spans {
    my ($text) = @_;
    my $code = blank_literals($text);
    my @spans;
    while ($code =~ /\#\[cfg\(test\)\]\s*(?:\#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*(\{(?:[^{}]++|(?1))*+\})/g) {
        push @spans, [$-[0], $+[0]];
    }
    return @spans;
}

# `$text` with its inline test modules blanked, newlines kept.
sub without_test_modules {
    my ($text) = @_;
    for my $s (test_spans($text)) {
        my ($start, $end) = @$s;
        substr($text, $start, $end - $start) =~ s/[^\n]/ /g;
    }
    return $text;
}

# How many lines of `$text` are outside its inline test modules (a line
# a test module starts or ends on counts as test code).
sub non_test_lines {
    my ($text) = @_;
    my $lines = () = $text =~ /\n/g;
    $lines++ if length($text) && substr($text, -1) ne "\n";
    for my $s (test_spans($text)) {
        my ($start, $end) = @$s;
        my $first = () = substr($text, 0, $start) =~ /\n/g;
        my $last = () = substr($text, 0, $end) =~ /\n/g;
        $lines -= $last - $first + 1;
    }
    return $lines;
}

# The files among `@files` that are test modules declared out of line
# (`#[cfg(test)] mod tests;` in `a/b.rs` is `a/b/tests.rs` or
# `a/b/tests/mod.rs`), and every file under such a module.
sub test_files {
    my (@files) = @_;
    my %is = map { $_ => 1 } @files;
    my %test;
    for my $f (@files) {
        open my $fh, '<', $f or die "$f: $!";
        my $code = blank_literals(do { local $/; <$fh> });
        my $dir = $f =~ m{(?:^|/)(?:lib|main|mod)\.rs$} ? $f =~ s{[^/]*$}{}r : $f =~ s{\.rs$}{/}r;
        while ($code =~ /\#\[cfg\(test\)\]\s*(?:\#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;/g) {
            for my $child ("$dir$1.rs", "$dir$1/mod.rs") {
                $test{$child} = 1 if $is{$child};
            }
            my $under = "$dir$1/";
            $test{$_} = 1 for grep { index($_, $under) == 0 } @files;
        }
    }
    return %test;
}

1;
