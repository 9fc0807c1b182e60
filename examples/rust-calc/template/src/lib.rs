//! A tiny integer calculator: tokenizes and evaluates expressions such as
//! `2 + 3 * (4 - 1)` with the usual precedence and left associativity.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Num(i64),
    Plus,
    Minus,
    Star,
    Slash,
    LParen,
    RParen,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalcError {
    UnexpectedChar(char),
    UnexpectedEnd,
    UnexpectedToken(Token),
    DivisionByZero,
}

/// Splits the input into tokens. Whitespace is ignored.
pub fn tokenize(input: &str) -> Result<Vec<Token>, CalcError> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = input.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' => i += 1,
            '0'..='9' => {
                let mut value: i64 = 0;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    let digit = chars[i].to_digit(10).unwrap() as i64;
                    value = value + digit; // BUG 1: forgets to shift by the base
                    i += 1;
                }
                tokens.push(Token::Num(value));
            }
            '+' => { tokens.push(Token::Plus); i += 1; }
            '-' => { tokens.push(Token::Minus); i += 1; }
            '*' => { tokens.push(Token::Star); i += 1; }
            '/' => { tokens.push(Token::Slash); i += 1; }
            '(' => { tokens.push(Token::LParen); i += 1; }
            ')' => { tokens.push(Token::RParen); i += 1; }
            other => return Err(CalcError::UnexpectedChar(other)),
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    // expr := term (('+' | '-') term)*
    fn expr(&mut self) -> Result<i64, CalcError> {
        let mut acc = self.term()?;
        loop {
            match self.peek() {
                Some(Token::Plus) => { self.next(); acc += self.term()?; }
                Some(Token::Minus) => { self.next(); acc += self.term()?; } // BUG 2: adds instead of subtracting
                _ => return Ok(acc),
            }
        }
    }

    // term := factor (('*' | '/') factor)*
    fn term(&mut self) -> Result<i64, CalcError> {
        let mut acc = self.factor()?;
        loop {
            match self.peek() {
                Some(Token::Star) => { self.next(); acc *= self.factor()?; }
                Some(Token::Slash) => {
                    self.next();
                    let rhs = self.factor()?;
                    acc /= rhs; // BUG 3: panics instead of reporting division by zero
                }
                _ => return Ok(acc),
            }
        }
    }

    // factor := NUM | '-' factor | '(' expr ')'
    fn factor(&mut self) -> Result<i64, CalcError> {
        match self.next() {
            Some(Token::Num(n)) => Ok(n),
            Some(Token::Minus) => Ok(-self.factor()?),
            Some(Token::LParen) => {
                let v = self.expr()?;
                match self.next() {
                    Some(Token::RParen) => Ok(v),
                    Some(t) => Err(CalcError::UnexpectedToken(t)),
                    None => Err(CalcError::UnexpectedEnd),
                }
            }
            Some(t) => Err(CalcError::UnexpectedToken(t)),
            None => Err(CalcError::UnexpectedEnd),
        }
    }
}

/// Evaluates an integer expression.
pub fn eval(input: &str) -> Result<i64, CalcError> {
    let tokens = tokenize(input)?;
    let mut p = Parser { tokens, pos: 0 };
    let v = p.expr()?;
    match p.next() {
        None => Ok(v),
        Some(t) => Err(CalcError::UnexpectedToken(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_single_digits() {
        assert_eq!(
            tokenize("1+2").unwrap(),
            vec![Token::Num(1), Token::Plus, Token::Num(2)]
        );
    }

    #[test]
    fn tokenizes_multi_digit_numbers() {
        assert_eq!(tokenize("42").unwrap(), vec![Token::Num(42)]);
        assert_eq!(tokenize("1000").unwrap(), vec![Token::Num(1000)]);
    }

    #[test]
    fn rejects_unknown_characters() {
        assert_eq!(tokenize("1 $ 2"), Err(CalcError::UnexpectedChar('$')));
    }

    #[test]
    fn adds_and_multiplies_with_precedence() {
        assert_eq!(eval("2 + 3 * 4").unwrap(), 14);
        assert_eq!(eval("(2 + 3) * 4").unwrap(), 20);
    }

    #[test]
    fn subtracts_left_to_right() {
        assert_eq!(eval("9 - 3").unwrap(), 6);
        assert_eq!(eval("9 - 3 - 2").unwrap(), 4);
    }

    #[test]
    fn unary_minus() {
        assert_eq!(eval("-4 * 2").unwrap(), -8);
    }

    #[test]
    fn reports_unbalanced_parentheses() {
        assert_eq!(eval("(1 + 2"), Err(CalcError::UnexpectedEnd));
    }
}
