"""enumerate"""
